package kube

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
)

// WorkloadProjector is the engine's engine.Projector over a projection.Projector: it
// writes the workloads (no dry run) and keeps only the error.
type WorkloadProjector struct{ P *projection.Projector }

// Project implements engine.Projector.
func (w WorkloadProjector) Project(ctx context.Context, namespace, binding, secretName string, p v1alpha1.WorkloadProjection) error {
	_, err := w.P.Project(ctx, namespace, binding, secretName, p, projection.DryRunNone)
	return err
}

// Unproject implements engine.Projector.
func (w WorkloadProjector) Unproject(ctx context.Context, namespace, binding string, p v1alpha1.WorkloadProjection) error {
	_, err := w.P.Unproject(ctx, namespace, binding, p, projection.DryRunNone)
	return err
}

var _ engine.Projector = WorkloadProjector{}
