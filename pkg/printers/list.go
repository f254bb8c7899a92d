package printers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

func extractList(obj runtime.Object) ([]runtime.Object, error) { return meta.ExtractList(obj) }
