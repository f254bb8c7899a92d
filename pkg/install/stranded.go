package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// StampCounter counts, per namespace, the records whose author stamp carries a trust
// token (store.Store.StampedCounts).
type StampCounter interface {
	StampedCounts(ctx context.Context, namespace, token string) (map[string]int, error)
}

// CurrentToken is the trust token stored in catalogNamespace, "" when there is none.
func CurrentToken(ctx context.Context, core kubernetes.Interface, catalogNamespace string) (string, error) {
	cm, err := core.CoreV1().ConfigMaps(catalogNamespace).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("cannot read the trust token ConfigMap %s/%s: %w", catalogNamespace, store.TrustConfigMap, err)
	}
	return strings.TrimSpace(cm.Data[store.TrustTokenKey]), nil
}

// Replaced is the token the results' token ConfigMap replaced (created anew with a new
// token), or "".
func Replaced(results []Result) string {
	for _, r := range results {
		if r.Action == Renewed && r.Replaced != "" {
			return r.Replaced
		}
	}
	return ""
}

// Stranded says which records lose their verified author once token is no longer the
// one in force: a line per namespace holding records stamped with it, with their count
// and the one command that makes them verified again ("kubectl catalog adopt -n NS", run
// by their owner once a policy is in force).
func Stranded(ctx context.Context, records StampCounter, token string) ([]string, error) {
	if records == nil {
		return nil, errors.New("the records cannot be listed here")
	}
	counts, err := records.StampedCounts(ctx, "", token)
	if err != nil {
		return nil, fmt.Errorf("cannot tell which namespaces hold records stamped with it: %w", err)
	}
	var lines []string
	for _, ns := range slices.Sorted(maps.Keys(counts)) {
		n := fmt.Sprintf("%d records", counts[ns])
		if counts[ns] == 1 {
			n = "1 record"
		}
		lines = append(lines, fmt.Sprintf("namespace %s: %s: kubectl catalog adopt -n %s", ns, n, ns))
	}
	return lines, nil
}

// WriteStranded writes lines (Stranded's) under lead, none when there are none, or that
// they cannot be told (err).
func WriteStranded(w io.Writer, lead, none string, lines []string, err error) {
	switch {
	case err != nil:
		fmt.Fprintf(w, "%s: %v; \"kubectl catalog doctor\" lists them, with the command that adopts them\n", lead, err)
	case len(lines) == 0:
		fmt.Fprintln(w, none)
	default:
		fmt.Fprintf(w, "%s:\n  %s\n", lead, strings.Join(lines, "\n  "))
	}
}

// renewedWhy says why Apply and Setup create the token anew although one is in place.
const renewedWhy = "the trust policy or its binding was missing or not as installed, or newer than the token: a token that existed while the policy was not in force may be on forged records"

// WarnRenewed tells, after Apply or Setup created the trust token anew (old is the token
// it replaced: Replaced), which namespaces' records that strands and the command that
// adopts each. dryRun says it would.
func WarnRenewed(ctx context.Context, w io.Writer, records StampCounter, old string, dryRun bool) {
	lines, err := Stranded(ctx, records, old)
	lead := "WARNING: the trust token was created anew (" + renewedWhy + "). The records stamped with the previous one no longer have a verified author, " +
		"and reconcile refuses what needs it until each namespace's owner adopts them"
	none := "The trust token was created anew (" + renewedWhy + "); no record carried the previous one: none is stranded."
	if dryRun {
		lead = "WARNING: the trust token would be created anew (" + renewedWhy + "). The records stamped with the one in force would lose their verified author " +
			"until each namespace's owner adopts them"
		none = "The trust token would be created anew (" + renewedWhy + "); no record carries the one in force: none would be stranded."
	}
	WriteStranded(w, lead, none, lines, err)
}
