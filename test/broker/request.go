package broker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// parseRoute maps the path to an endpoint. Ids are path segments
// percent-decoded one by one, so an id may contain an escaped "/".
func parseRoute(r *http.Request) (route, *reply) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			rep := errorReply(http.StatusBadRequest, "", "path segment %q is not valid percent-encoding", s)
			return route{}, &rep
		}
		segs[i] = u
	}
	notFound := func() (route, *reply) {
		rep := errorReply(http.StatusNotFound, "", "no OSB endpoint at %s", r.URL.EscapedPath())
		return route{}, &rep
	}
	methods := func(rt route, allowed map[string]Op) (route, *reply) {
		if op, ok := allowed[r.Method]; ok {
			rt.op = op
			return rt, nil
		}
		var names []string
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if _, ok := allowed[m]; ok {
				names = append(names, m)
			}
		}
		rep := errorReply(http.StatusMethodNotAllowed, "", "%s is not allowed on %s", r.Method, r.URL.EscapedPath())
		rep.setHeader("Allow", strings.Join(names, ", "))
		return rt, &rep
	}
	if len(segs) < 2 || segs[0] != "v2" {
		return notFound()
	}
	if len(segs) == 2 && segs[1] == "catalog" {
		return methods(route{}, map[string]Op{http.MethodGet: OpCatalog})
	}
	if segs[1] != "service_instances" || len(segs) < 3 || segs[2] == "" {
		return notFound()
	}
	rt := route{instanceID: segs[2]}
	switch {
	case len(segs) == 3:
		return methods(rt, map[string]Op{http.MethodPut: OpProvision, http.MethodPatch: OpUpdate,
			http.MethodDelete: OpDeprovision, http.MethodGet: OpGetInstance})
	case len(segs) == 4 && segs[3] == "last_operation":
		return methods(rt, map[string]Op{http.MethodGet: OpLastOperation})
	case len(segs) >= 5 && segs[3] == "service_bindings" && segs[4] != "":
		rt.bindingID = segs[4]
		switch {
		case len(segs) == 5:
			return methods(rt, map[string]Op{http.MethodPut: OpBind, http.MethodDelete: OpUnbind, http.MethodGet: OpGetBinding})
		case len(segs) == 6 && segs[5] == "last_operation":
			return methods(rt, map[string]Op{http.MethodGet: OpBindingLastOperation})
		}
	}
	return notFound()
}

// versionProblem explains what is wrong with an X-Broker-API-Version value;
// "" when it is acceptable (any 2.x).
func versionProblem(v string) string {
	if v == "" {
		return fmt.Sprintf("the %s header is required; this broker speaks OSB API %s", osb.HeaderAPIVersion, osb.APIVersion)
	}
	major, minor, ok := strings.Cut(v, ".")
	if !ok || !isDigits(major) || !isDigits(minor) {
		return fmt.Sprintf("%s %q is not MAJOR.MINOR; this broker speaks OSB API %s", osb.HeaderAPIVersion, v, osb.APIVersion)
	}
	if major != "2" {
		return fmt.Sprintf("OSB API version %s is not supported; this broker speaks %s", v, osb.APIVersion)
	}
	return ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// newOperationKey makes the "operation" value of an async operation.
func (b *Broker) newOperationKey(kind Op) string {
	id := uuid.NewString()
	if b.opts.PlainOperationKeys {
		return string(kind) + "-" + id
	}
	return fmt.Sprintf("%s %s/step=1&of=2 +%%#?", kind, id)
}

// digest identifies a request's attributes for the identical-or-conflicting
// decision on a re-sent PUT or PATCH. Maps marshal with sorted keys, so equal
// documents give equal digests.
func digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("digest of %T: %v", v, err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// decodeBody decodes a JSON request body; unknown fields are ignored, as the
// spec requires.
func decodeBody(body []byte, v any) *reply {
	if len(bytes.TrimSpace(body)) == 0 {
		rep := errorReply(http.StatusBadRequest, "", "the request needs a JSON body")
		return &rep
	}
	if err := json.Unmarshal(body, v); err != nil {
		rep := errorReply(http.StatusBadRequest, "", "the request body is not valid JSON for this endpoint: %v", err)
		return &rep
	}
	return nil
}

// decodeParams reads an optional "parameters" value, which must be an object.
func decodeParams(raw json.RawMessage) (map[string]any, *reply) {
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		rep := errorReply(http.StatusBadRequest, "", "parameters must be a JSON object")
		return nil, &rep
	}
	return m, nil
}

// rawFields are request fields kept verbatim, so that the broker stores what
// the platform sent rather than what the shared types know about.
type rawFields struct {
	Context      json.RawMessage `json:"context"`
	Parameters   json.RawMessage `json:"parameters"`
	BindResource json.RawMessage `json:"bind_resource"`
}

func (r rawFields) context() json.RawMessage {
	if len(r.Context) == 0 || bytes.Equal(bytes.TrimSpace(r.Context), []byte("null")) {
		return nil
	}
	return r.Context
}

// checkPlatformLocked records a violation when the originating identity's
// platform differs from context.platform, which the spec requires to match.
func (b *Broker) checkPlatformLocked(c *call, ctx json.RawMessage) {
	if c.identity == nil {
		return
	}
	if c.identity.Error != "" {
		b.violateLocked("%s %s: malformed %s header: %s", c.r.Method, c.r.URL.Path, osb.HeaderOriginatingIdentity, c.identity.Error)
		return
	}
	if len(ctx) == 0 {
		return
	}
	var p struct {
		Platform string `json:"platform"`
	}
	if json.Unmarshal(ctx, &p) == nil && p.Platform != c.identity.Platform {
		b.violateLocked("%s %s: originating identity platform %q differs from context.platform %q",
			c.r.Method, c.r.URL.Path, c.identity.Platform, p.Platform)
	}
}
