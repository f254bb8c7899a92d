package migrate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// authorOfSecrets says why the svcat object u, whose spec takes parameters from the
// Secrets from, is not migrated by the user running the migration; "" when it is.
//
// A migrated record's author is whoever writes it (with the trust policy in force the API
// server stamps the writer), and the engine reads the Secrets a spec names with its
// author's rights. The svcat object's author cannot be kept: svcat's spec.userInfo is
// not verifiable once svcat's admission is gone. Were an administrator to migrate a
// tenant's object naming a Secret the tenant may not read, the catalog would read it
// with the administrator's rights and send it to the broker. So an object whose
// parameters come from Secrets is migrated only by the user svcat recorded as its author,
// as its own verb would be; every other object of the migration goes on.
func (m *Migrator) authorOfSecrets(ctx context.Context, u *unstructured.Unstructured, from []v1alpha1.ParametersFromSource) string {
	if len(from) == 0 {
		return ""
	}
	recorded := str(u, "spec", "userInfo", "username")
	w, err := m.cfg.Store.Writer(ctx)
	if err != nil {
		return fmt.Sprintf("cannot tell who runs the migration, so it cannot be checked against the author of its spec.parametersFrom: %v", err)
	}
	if w != nil && recorded != "" && w.Username == recorded {
		return ""
	}
	if recorded == "" {
		return "its parameters come from Secrets (spec.parametersFrom), which the catalog reads with the rights of the record's author, " +
			"and svcat recorded no author for it (spec.userInfo): its owner creates it again with kubectl catalog (--external-id keeps the broker's instance)"
	}
	return fmt.Sprintf("its parameters come from Secrets (spec.parametersFrom), which the catalog reads with the rights of the record's author, "+
		"and svcat recorded %q as its author: %s migrates it (kubectl catalog migrate svcat -n %s)", recorded, recorded, u.GetNamespace())
}
