package records

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Watcher lists and watches the ConfigMaps that keep records, whole, for a watch of them
// ("get -w"): one label-selected list (see Selector) gives the records and the
// resourceVersion a watch resumes from; each change it sends is a ConfigMap DecodeRecord
// reads.
type Watcher struct{ core kubernetes.Interface }

// NewWatcher lists and watches with core.
func NewWatcher(core kubernetes.Interface) *Watcher { return &Watcher{core: core} }

// List lists the ConfigMaps of namespace ("" for every namespace) that selector selects.
func (w *Watcher) List(ctx context.Context, namespace, selector string) (*corev1.ConfigMapList, error) {
	return w.core.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
}

// Watch watches the ConfigMaps of namespace that selector selects, with opts (the
// resourceVersion to resume from, say).
func (w *Watcher) Watch(ctx context.Context, namespace, selector string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.LabelSelector = selector
	return w.core.CoreV1().ConfigMaps(namespace).Watch(ctx, opts)
}
