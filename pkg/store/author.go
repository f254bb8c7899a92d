package store

import (
	"context"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Identity is who the store writes as: the user the API server authenticates.
type Identity struct {
	Username string
	Groups   []string
}

// WithIdentity tells the store who it writes as, for the author annotations of spec
// writes. Without it the store stamps no author (and, where the trust policy is in force,
// the API server refuses spec writes).
func WithIdentity(id func(ctx context.Context) (*Identity, error)) Option {
	return func(s *Store) { s.identity = id }
}

// Writer is who the store writes as (WithIdentity), the author its spec writes stamp; nil
// when it was given no identity.
func (s *Store) Writer(ctx context.Context) (*Identity, error) {
	if s.identity == nil {
		return nil, nil
	}
	return s.identity(ctx)
}

// WithTrustToken gives the store the current trust token (see TrustConfigMap), stamped on
// the records written under WithIntent. An empty token stamps none.
func WithTrustToken(token func(ctx context.Context) (string, error)) Option {
	return func(s *Store) { s.trustToken = token }
}

// ReadAheadAuthor starts reading, in the background, who the store writes as and the
// trust token, for a write of the user's intent (WithIntent) that comes later: the
// reads go out with a verb's first ones. Both sources keep what they read; an error is
// not kept, and the write asks again.
func (s *Store) ReadAheadAuthor(ctx context.Context) {
	if s.identity != nil {
		ahead.Go(ctx, func() { _, _ = s.identity(ctx) })
	}
	if s.trustToken != nil {
		ahead.Go(ctx, func() { _, _ = s.trustToken(ctx) })
	}
}

type intentKey struct{}

// WithIntent marks the writes made with ctx as the user's own intent: a verb creating a
// record, or changing its spec on the user's command. Such a write stamps the user as the
// record's author together with the trust token, and the spec it wrote is remembered as
// this process's own (Intended). Every other write (the engine's status writes, above
// all) keeps the author the record has; should one change the spec, it stamps the writer
// without the token, leaving the record without a verified author.
func WithIntent(ctx context.Context) context.Context {
	return context.WithValue(ctx, intentKey{}, true)
}

func isIntent(ctx context.Context) bool { v, _ := ctx.Value(intentKey{}).(bool); return v }

// Author is a record's author as its annotations name it. Whether the annotations can be
// believed is for the caller to decide (the trust token, the policy).
type Author struct {
	Username string
	Groups   []string
	// Token is the trust token the spec was written under; empty when none.
	Token string
}

// AuthorOf reads a record's author annotations.
func AuthorOf(record v1alpha1.Record) Author {
	a := record.GetAnnotations()
	return Author{Username: a[AnnotationAuthor], Token: a[AnnotationTrustToken], Groups: DecodeGroups(a[AnnotationAuthorGroups])}
}

// EncodeGroups is the value of AnnotationAuthorGroups for groups, as the trust policy
// checks it: the groups joined with "," (the form of every release), unless a group
// holds a "," (an LDAP group "cn=a,ou=b", say) or starts with "[", which that form cannot
// keep apart: then a list, each group in double quotes with "\" and `"` escaped by a
// "\" (`["cn=a,ou=b","dev"]`), which the policy accepts whatever the groups.
func EncodeGroups(groups []string) string {
	joinable := true
	for _, g := range groups {
		if strings.Contains(g, ",") || strings.HasPrefix(g, "[") {
			joinable = false
		}
	}
	if joinable {
		return strings.Join(groups, ",")
	}
	quoted := make([]string, len(groups))
	for i, g := range groups {
		quoted[i] = `"` + strings.ReplaceAll(strings.ReplaceAll(g, `\`, `\\`), `"`, `\"`) + `"`
	}
	return "[" + strings.Join(quoted, ",") + "]"
}

// DecodeGroups reads a value of AnnotationAuthorGroups (EncodeGroups): a list when it
// starts with "[", else the groups joined with ",". A list that does not read as one
// gives no groups: a group the author may not have is never made up.
func DecodeGroups(v string) []string {
	if v == "" {
		return nil
	}
	if !strings.HasPrefix(v, "[") {
		return strings.Split(v, ",")
	}
	groups, ok := decodeGroupList(v)
	if !ok {
		return nil
	}
	return groups
}

// decodeGroupList reads the list form of EncodeGroups, strictly.
func decodeGroupList(v string) ([]string, bool) {
	if !strings.HasSuffix(v, "]") || len(v) < 2 {
		return nil, false
	}
	rest := v[1 : len(v)-1]
	var out []string
	for rest != "" {
		if rest[0] != '"' {
			return nil, false
		}
		var b strings.Builder
		i, closed := 1, false
		for ; i < len(rest); i++ {
			c := rest[i]
			if c == '\\' {
				if i+1 >= len(rest) || (rest[i+1] != '\\' && rest[i+1] != '"') {
					return nil, false
				}
				b.WriteByte(rest[i+1])
				i++
				continue
			}
			if c == '"' {
				closed = true
				break
			}
			b.WriteByte(c)
		}
		if !closed {
			return nil, false
		}
		out = append(out, b.String())
		rest = rest[i+1:]
		if rest == "" {
			break
		}
		if rest[0] != ',' || len(rest) == 1 {
			return nil, false
		}
		rest = rest[1:]
	}
	return out, true
}

// prepareWrite finishes a ConfigMap about to be written: a spec left as it was read keeps
// its exact bytes, and a spec that changes is stamped with its author (see WithIntent).
// It returns the spec hash to remember as intended once the write is done ("" for none).
func (s *Store) prepareWrite(ctx context.Context, cm *corev1.ConfigMap, create bool) (string, error) {
	hash := cm.Annotations[AnnotationSpecHash]
	changed := true
	if !create {
		// Same spec, compressed or not as before: the bytes read are kept (format 1
		// bytes too: their status is ignored where StatusDataKey is present). A status
		// that grew can make the same spec need compressing, and that is other bytes.
		if r, ok := s.specs.lookup(cm.UID, cm.ResourceVersion); ok && r.hash == hash &&
			isCompressedFormat(r.format) == isCompressedFormat(cm.Annotations[AnnotationFormat]) {
			cm.Data[DataKey] = r.raw
			changed = false
		}
	}
	intent := isIntent(ctx)
	if !changed && !intent {
		return "", nil
	}
	var id *Identity
	if s.identity != nil {
		var err error
		if id, err = s.identity(ctx); err != nil {
			return "", err
		}
	}
	delete(cm.Annotations, AnnotationTrustToken)
	if id == nil {
		delete(cm.Annotations, AnnotationAuthor)
		delete(cm.Annotations, AnnotationAuthorGroups)
	} else {
		cm.Annotations[AnnotationAuthor] = id.Username
		cm.Annotations[AnnotationAuthorGroups] = EncodeGroups(id.Groups)
	}
	if !intent {
		return "", nil
	}
	if s.trustToken != nil && id != nil {
		tok, err := s.trustToken(ctx)
		if err != nil {
			return "", err
		}
		if tok != "" {
			cm.Annotations[AnnotationTrustToken] = tok
		}
	}
	return hash, nil
}

// isCompressedFormat reports whether a format annotation names a format whose spec is
// compressed.
func isCompressedFormat(format string) bool { return format == strconv.Itoa(formatCompressed) }
