package kube

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
)

// PreviewProjection implements engine.ProjectionPreviewer: the change is computed
// (server false) or sent to the API server as a dry run (server true).
func (w WorkloadProjector) PreviewProjection(ctx context.Context, namespace, binding, secretName string, p v1alpha1.WorkloadProjection, server bool) (engine.WorkloadChange, error) {
	mode := projection.DryRunClient
	if server {
		mode = projection.DryRunServer
	}
	c, err := w.P.Project(ctx, namespace, binding, secretName, p, mode)
	if err != nil || c == nil {
		return engine.WorkloadChange{Workload: p}, err
	}
	return engine.WorkloadChange{Workload: p, Changed: c.Changed, After: c.After}, nil
}

var _ engine.ProjectionPreviewer = WorkloadProjector{}
