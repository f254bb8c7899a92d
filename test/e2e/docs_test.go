package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// The documents whose command lines the tests run (helpers_docs_test.go).
var (
	docReadme      = filepath.Join("..", "..", "README.md")
	docWalkthrough = filepath.Join("..", "..", "docs", "walkthrough.md")
	docDeclarative = filepath.Join("..", "..", "docs", "declarative.md")
)

// docBrokerSecret is the Secret of the demo broker's credentials that README.md and the
// walkthrough create, name in "kubectl catalog register" and delete again.
const docBrokerSecret = "demo-broker-auth"

// TestDocs_QuickStartAsWritten runs README.md's "A local control plane to try things by
// hand" (the ```sh block marked <!-- e2e: quickstart -->) line by line, as a newcomer
// types it, with the test broker as "make broker": init, the broker's Secret, register,
// marketplace, provision --wait (Ready), describe, bind (its Secret), deprovision
// (record gone), reconcile -A (nothing pending).
func TestDocs_QuickStartAsWritten(t *testing.T) {
	serial(t, docsAsWritten)
	docCleanup(t, []string{"catalog-system"}, []string{"default"})
	docRun(t, docReadme, "quickstart", 500*time.Millisecond)
}

// TestDocs_WalkthroughAsWritten runs docs/walkthrough.md's blocks (each marked
// <!-- e2e: walkthrough -->) line by line: init, register, marketplace, provision, bind
// into a Deployment, a Pod of one's own using the Secret (created, not run: the control
// plane has no kubelet, and the walkthrough only reads its spec back), unbind,
// deprovision, a provision interrupted with Ctrl-C once it says Provisioning, and a
// plain reconcile that finishes it (the instance then Ready, as the walkthrough's
// comment says).
func TestDocs_WalkthroughAsWritten(t *testing.T) {
	serial(t, docsAsWritten)
	docCleanup(t, []string{"catalog-system", "demo"}, nil)
	// Long enough that the interrupted provision is still at the broker when Ctrl-C
	// comes, short enough that the waits are quick.
	docRun(t, docWalkthrough, "walkthrough", slow(1500*time.Millisecond))
}

// TestDocs_DeclarativeAsWritten runs docs/declarative.md's blocks (each marked
// <!-- e2e: declarative -->) line by line: the demo broker registered, a parameters
// Secret, a file of an instance and a binding of it written from a here-document,
// apply --wait (both Ready, the binding's Secret written), diff (nothing to change), the
// round trip through get -o yaml, delete -f --wait (both gone), and the clean-up.
func TestDocs_DeclarativeAsWritten(t *testing.T) {
	serial(t, docsAsWritten)
	docCleanup(t, []string{"catalog-system"}, []string{"default"})
	t.Cleanup(func() {
		admin, err := cp.Client(controlplane.AdminUser)
		assert.NilError(t, err)
		_ = admin.CoreV1().Secrets("default").Delete(context.Background(), "db-params", metav1.DeleteOptions{})
	})
	docRun(t, docDeclarative, "declarative", 500*time.Millisecond)
}

// TestDocs_EveryCommandLineIsRunOrMapped reads the documents the tests run, without a
// cluster: every ```sh block of the walkthrough is marked to run, every line of the
// marked blocks is one docRules knows, and the Makefile has what the mapped make lines
// assume. A line the reader does not know fails loudly, naming it.
func TestDocs_EveryCommandLineIsRunOrMapped(t *testing.T) {
	t.Parallel()
	// Every line is one a rule knows; the make targets the documents name exist, and
	// "make broker" serves what the rule that maps it assumes: the demo catalog on
	// 127.0.0.1:8080, user and password demo.
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	assert.NilError(t, err)
	for _, doc := range []struct{ path, name string }{{docReadme, "quickstart"}, {docWalkthrough, "walkthrough"}, {docDeclarative, "declarative"}} {
		plan, err := docPlan(doc.path, doc.name)
		assert.NilError(t, err)
		assert.Check(t, len(plan) > 5, "%s: %d commands", doc.path, len(plan))
		for _, p := range plan {
			if p.cmd.words[0] == "make" {
				target := p.cmd.words[1]
				assert.Check(t, is.Regexp(`(?m)^`+regexp.QuoteMeta(target)+`:`, string(makefile)), "%s: the Makefile has no target %q", p.cmd.at, target)
			}
		}
	}
	broker := regexp.MustCompile(`(?m)^broker:(.*)\n\t(.*)$`).FindStringSubmatch(string(makefile))
	assert.Assert(t, broker != nil, "the Makefile's broker target")
	for _, want := range []string{"./test/broker/cmd/osb-test-broker ", "--listen $(BROKER_LISTEN) ", "--username $${BROKER_USERNAME:-demo} ", "--password $${BROKER_PASSWORD:-demo} "} {
		assert.Check(t, is.Contains(broker[2], want), "make broker, which docRules maps onto the test broker")
	}
	// It listens on 127.0.0.1:8080 unless told otherwise, which make help says.
	assert.Check(t, is.Regexp(`(?m)^BROKER_LISTEN \?= 127\.0\.0\.1:8080$`, string(makefile)))
	assert.Check(t, is.Contains(broker[1], "$(BROKER_LISTEN) (BROKER_LISTEN=HOST:PORT for another)"), "make help's line of make broker")
	for _, doc := range []string{docReadme, docWalkthrough, filepath.Join("..", "..", "docs", "test-broker.md")} {
		text, err := os.ReadFile(doc)
		assert.NilError(t, err)
		words := strings.Join(strings.Fields(string(text)), " ")
		assert.Check(t, strings.Contains(words, "make broker BROKER_LISTEN=127.0.0.1:9090"), "%s says how make broker takes another port", doc)
	}

	// README, the walkthrough and docs/declarative.md register the demo broker with the
	// same Secret, and delete it when they clean up.
	for _, doc := range []struct{ path, name string }{{docReadme, "quickstart"}, {docWalkthrough, "walkthrough"}, {docDeclarative, "declarative"}} {
		plan, err := docPlan(doc.path, doc.name)
		assert.NilError(t, err)
		var secrets, created, deleted []string
		for _, p := range plan {
			call := parseCatalogCall(p.cmd.words[1:])
			if v, ok := call.value("--basic-auth-secret"); ok && call.verb == "register" {
				secrets = append(secrets, v)
			}
			if w := p.cmd.words; len(w) > 3 && w[0] == "kubectl" && w[2] == "secret" {
				switch {
				case w[1] == "create" && len(w) > 4:
					created = append(created, w[4])
				case w[1] == "delete":
					deleted = append(deleted, w[3])
				}
			}
		}
		assert.Check(t, is.DeepEqual(secrets, []string{docBrokerSecret}), "%s: the broker's Secret", doc.path)
		assert.Check(t, is.Contains(created, docBrokerSecret), "%s: the Secrets it creates", doc.path)
		slices.Sort(created)
		slices.Sort(deleted)
		assert.Check(t, is.DeepEqual(deleted, created), "%s: the Secrets its clean-up deletes", doc.path)
	}

	for _, doc := range []struct{ path, name string }{{docWalkthrough, "walkthrough"}, {docDeclarative, "declarative"}} {
		blocks, err := docBlocks(doc.path)
		assert.NilError(t, err)
		for _, b := range blocks {
			assert.Check(t, b.marker == doc.name, "%s: every ```sh block of %s is run: mark it <!-- e2e: %s -->", b.at, doc.path, doc.name)
		}
	}

	dir := t.TempDir()
	for _, tc := range []struct {
		name, block, want string
	}{
		{"an unknown line", "kubectl catalog init\nhelm install demo ./chart\n", `x.md:6: no rule of docRules (test/e2e/helpers_docs_test.go) knows the line "helm install demo ./chart"`},
		{"make broker elsewhere", "make broker BROKER_ASYNC_DELAY=1s\n", `no rule of docRules`},
		{"a pipe", "kubectl catalog get instances | grep db\n", `x.md:5: the tests run no "|"`},
		{"a variable", "kubectl catalog provision $NAME --class c\n", `the tests expand no variables`},
		{"kubectl in the background", "kubectl catalog reconcile -A &\n", `x.md:5: the tests run "kubectl catalog reconcile -A &" only as a command of its own`},
		{"kubectl redirected", "kubectl catalog get instances > out.txt\n", `only as a command of its own`},
		{"an unclosed quote", "kubectl get pod -o jsonpath='{.x}\n", `unterminated single quote`},
		{"no marked block", "", `no ` + "```sh" + ` block is marked`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "# x\n\n<!-- e2e: x -->\n```sh\n" + tc.block + "```\n"
			if tc.block == "" {
				text = "```sh\nkubectl version\n```\n"
			}
			path := filepath.Join(dir, "x.md")
			assert.NilError(t, os.WriteFile(path, []byte(text), 0o644))
			_, err := docPlan(path, "x")
			assert.Check(t, is.ErrorContains(err, tc.want))
		})
	}

	// What the shell would make of a line, with quotes, continuations, &&, a
	// here-document and comments.
	path := filepath.Join(dir, "y.md")
	assert.NilError(t, os.WriteFile(path, []byte("<!-- e2e: y -->\n```sh\n"+
		"kubectl get deployment web -n demo \\\n  -o jsonpath='{.a}{\"\\n\"}'   # it's a comment\n"+
		"kubectl catalog bind db && kubectl catalog describe binding \"d b\"\n"+
		"# ^C: a note\n"+
		"cat > app.yaml <<'YAML'\nkind: Pod  # kept\nYAML\n"+
		"make broker &\n```\n"), 0o644))
	plan, err := docPlan(path, "y")
	assert.NilError(t, err)
	var got [][]string
	for _, p := range plan {
		got = append(got, append([]string{p.cmd.at}, p.cmd.words...))
	}
	assert.DeepEqual(t, got, [][]string{
		{"y.md:3", "kubectl", "get", "deployment", "web", "-n", "demo", "-o", `jsonpath={.a}{"\n"}`},
		{"y.md:5", "kubectl", "catalog", "bind", "db"},
		{"y.md:5", "kubectl", "catalog", "describe", "binding", "d b"},
		{"y.md:7", "cat", ">", "app.yaml", "<<YAML"},
		{"y.md:10", "make", "broker"},
	})
	assert.DeepEqual(t, plan[0].cmd.notes, []string{"it's a comment"})
	assert.DeepEqual(t, plan[2].cmd.notes, []string{"^C: a note"})
	assert.Equal(t, plan[3].cmd.heredoc, "kind: Pod  # kept\n")
	assert.Check(t, plan[4].cmd.background)
}
