package kube

import (
	"os"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// EventRecorder is the engine's recorder of Events, written with the caller's
// credentials: the user's for a verb (reporting instance "cli", holder empty), the
// ServiceAccount's for reconcile (its host or pod, from holder). A caller who may not
// create events records none; -v=2 says why.
func EventRecorder(core kubernetes.Interface, holder string) engine.EventRecorder {
	instance := "cli"
	if holder != "" {
		instance, _ = os.Hostname()
		if _, after, ok := strings.Cut(holder, "@"); ok {
			instance, _, _ = strings.Cut(after, "/")
		}
	}
	return &engine.Aggregator{
		Sink: &engine.APIEventSink{Client: core, Instance: instance},
		Log: func(err error) {
			klog.V(2).Infof("events not recorded: %v", err)
		},
	}
}
