package store

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type dryRunKey struct{}

// WithDryRun marks the record writes made with ctx (Create, Update, Delete and what is
// built on them) as a server-side dry run: the API server runs them through validation
// and admission, the trust policy included, and stores nothing. What they return is
// the record as it would have been stored.
func WithDryRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, dryRunKey{}, true)
}

// IsDryRun reports whether the writes made with ctx are a server-side dry run.
func IsDryRun(ctx context.Context) bool { v, _ := ctx.Value(dryRunKey{}).(bool); return v }

func dryRun(ctx context.Context) []string {
	if IsDryRun(ctx) {
		return []string{metav1.DryRunAll}
	}
	return nil
}
