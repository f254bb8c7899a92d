package provision

import "k8s.io/apimachinery/pkg/runtime"

type runtimeRaw = runtime.RawExtension
