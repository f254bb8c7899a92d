package authority

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

type runner string

func (r runner) Identity(context.Context) (*osb.OriginatingIdentity, error) {
	return &osb.OriginatingIdentity{Username: string(r)}, nil
}

type fixedTrust TrustState

func (s fixedTrust) TrustState(context.Context) (TrustState, error) { return TrustState(s), nil }

// svcatRBAC lets each user get the Service Catalog resources listed for them, in "dev".
type svcatRBAC struct {
	may    map[string][]string
	runner string
}

func (r svcatRBAC) Allowed(_ context.Context, user string, _ []string, a authorizationv1.ResourceAttributes) (bool, string, error) {
	for _, res := range r.may[user] {
		if a == (authorizationv1.ResourceAttributes{Namespace: "dev", Verb: "get", Group: "servicecatalog.k8s.io", Resource: res}) {
			return true, "", nil
		}
	}
	return false, "no rule", nil
}

func (r svcatRBAC) SelfAllowed(ctx context.Context, a authorizationv1.ResourceAttributes) (bool, string, error) {
	return r.Allowed(ctx, r.runner, nil, a)
}

// A record's migrated-from annotation counts in full (migratedVerified) only under a
// trust policy that covers it and when the record's verified author (or the runner, when
// it is the author) may read the Service Catalog's objects of the record's kind in its
// namespace; without such a policy it is unverified; under it, otherwise, it counts for
// nothing. For instances and bindings alike.
func TestMigrationOf_VerifiedOnlyUnderThePolicyForAServiceCatalogReader(t *testing.T) {
	covers := TrustState{Token: "tok", MigratedFrom: true}
	for _, kind := range []string{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding} {
		res := map[string]string{v1alpha1.KindServiceInstance: "serviceinstances", v1alpha1.KindServiceBinding: "servicebindings"}[kind]
		other := map[string]string{v1alpha1.KindServiceInstance: "servicebindings", v1alpha1.KindServiceBinding: "serviceinstances"}[kind]
		for _, tc := range []struct {
			name       string
			annotated  bool
			state      TrustState
			author     string
			token      string
			readerOf   string
			runnerName string
			want       migration
		}{
			{name: "no annotation", state: covers, author: "admin", token: "tok", readerOf: res, want: notMigrated},
			{name: "no policy", annotated: true, author: "mallory", want: migratedUnverified},
			{name: "an earlier release's policy", annotated: true, state: TrustState{Token: "tok"}, author: "mallory", token: "tok", want: migratedUnverified},
			{name: "a Service Catalog reader's migration", annotated: true, state: covers, author: "admin", token: "tok", readerOf: res, want: migratedVerified},
			{name: "a reader of the other kind only", annotated: true, state: covers, author: "admin", token: "tok", readerOf: other, want: notMigrated},
			{name: "forged by a tenant", annotated: true, state: covers, author: "mallory", token: "tok", want: notMigrated},
			{name: "written before the policy (no token)", annotated: true, state: covers, author: "admin", readerOf: res, want: notMigrated},
			{name: "the runner's own, a reader", annotated: true, state: covers, author: "admin", token: "tok", readerOf: res, runnerName: "admin", want: migratedVerified},
			{name: "the runner's own, not a reader", annotated: true, state: covers, author: "mallory", token: "tok", runnerName: "mallory", want: notMigrated},
		} {
			t.Run(kind+": "+tc.name, func(t *testing.T) {
				meta := metav1.ObjectMeta{Namespace: "dev", Name: "db", UID: "u-1",
					Labels: map[string]string{store.LabelManagedBy: store.ManagedBy},
					Annotations: map[string]string{store.AnnotationAuthor: tc.author, store.AnnotationAuthorGroups: store.EncodeGroups([]string{"system:authenticated"}),
						store.AnnotationTrustToken: tc.token}}
				if tc.annotated {
					meta.Annotations[store.AnnotationMigratedFrom] = "ServiceInstance/dev/db/old-uid"
				}
				var rec v1alpha1.Record = &v1alpha1.ServiceInstance{ObjectMeta: meta}
				if kind == v1alpha1.KindServiceBinding {
					rec = &v1alpha1.ServiceBinding{ObjectMeta: meta}
				}
				name := tc.runnerName
				if name == "" {
					name = "reconcile"
				}
				authz := svcatRBAC{may: map[string][]string{}, runner: name}
				if tc.readerOf != "" {
					authz.may["admin"] = []string{tc.readerOf}
				}
				var src TrustSource
				if tc.state.Token != "" {
					src = fixedTrust(tc.state)
				}
				auth := New(func() Env {
					return Env{Store: storetest.NewCluster().Store(), Platform: runner(name), Trust: src, Authorizer: authz, CatalogNamespace: "catalog-system"}
				})
				got, err := auth.migrationOf(context.Background(), kind, rec)
				assert.NilError(t, err)
				assert.Equal(t, got, tc.want)
			})
		}
	}
}
