package osb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// CatalogWalker is implemented by clients that decode a catalog one service at a time,
// so that a catalog of many megabytes is never held whole in memory. Use WalkCatalog,
// which falls back to GetCatalog for clients that do not implement it.
type CatalogWalker interface {
	// WalkCatalog fetches the catalog and calls fn with each service in the broker's
	// order. The service is valid only during the call. An error fn returns stops the
	// walk and is returned as it is; a body that does not decode is a
	// *MalformedResponseError, as from GetCatalog.
	WalkCatalog(ctx context.Context, req *CatalogRequest, fn func(*Service) error) error
}

// WalkCatalog calls fn with each service of c's catalog: decoded one at a time where c
// is a CatalogWalker, otherwise from the whole catalog GetCatalog returns.
func WalkCatalog(ctx context.Context, c Client, req *CatalogRequest, fn func(*Service) error) error {
	if w, ok := c.(CatalogWalker); ok {
		return w.WalkCatalog(ctx, req, fn)
	}
	cat, err := c.GetCatalog(ctx, req)
	if err != nil {
		return err
	}
	for i := range cat.Services {
		if err := fn(&cat.Services[i]); err != nil {
			return err
		}
	}
	return nil
}

// walkAborted carries an error of the caller's fn through the decoder, so that it is
// not mistaken for a malformed body.
type walkAborted struct{ err error }

func (w *walkAborted) Error() string { return w.err.Error() }

func (c *client) WalkCatalog(ctx context.Context, req *CatalogRequest, fn func(*Service) error) error {
	if req == nil {
		req = &CatalogRequest{}
	}
	limit := c.maxCatalog
	if req.MaxBytes > 0 && req.MaxBytes < limit {
		limit = req.MaxBytes
	}
	cl := call{op: "GetCatalog", method: http.MethodGet, path: "/v2/catalog", opts: req.RequestOptions, maxBytes: limit}
	cl.stream = func(body io.Reader) error {
		return decodeCatalogStream(body, func(s *Service) error {
			if err := fn(s); err != nil {
				return &walkAborted{err: err}
			}
			return nil
		})
	}
	_, err := c.do(ctx, cl, http.StatusOK)
	var aborted *walkAborted
	if errors.As(err, &aborted) {
		return aborted.err
	}
	return err
}

// limitedBody reads at most limit bytes of r and then fails with a *BodyTooLargeError:
// a streamed body is capped like one read whole.
type limitedBody struct {
	r         io.Reader
	remaining int64
	limit     int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.remaining <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := io.ReadFull(l.r, one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, &BodyTooLargeError{Limit: l.limit}
	}
	if int64(len(p)) > l.remaining {
		p = p[:l.remaining]
	}
	n, err := l.r.Read(p)
	l.remaining -= int64(n)
	return n, err
}

// decodeCatalogStream decodes a catalog body from r, calling fn with each service as it
// is decoded. Its rules are DecodeCatalog's: the body is a JSON object with a "services"
// key (matched in any case, as encoding/json does) whose value is a list or null; other
// keys are skipped. A body with two "services" keys is refused: which one counts would
// depend on the decoder.
func decodeCatalogStream(r io.Reader, fn func(*Service) error) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	switch {
	case err == io.EOF:
		return errors.New("empty body, expected a JSON object")
	case err != nil:
		return streamError(err)
	case tok != json.Delim('{'):
		return errors.New("body is not a JSON object")
	}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return streamError(err)
		}
		key, _ := tok.(string)
		if !strings.EqualFold(key, "services") {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return streamError(err)
			}
			continue
		}
		if seen {
			return errors.New(`catalog has more than one "services" key`)
		}
		seen = true
		if err := decodeServices(dec, fn); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return streamError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return errors.New("decoding catalog: data after the JSON object")
		}
		return streamError(err)
	}
	if !seen {
		return errors.New(`catalog has no "services" key`)
	}
	return nil
}

func decodeServices(dec *json.Decoder, fn func(*Service) error) error {
	tok, err := dec.Token()
	if err != nil {
		return streamError(err)
	}
	if tok == nil { // "services": null is an empty catalog
		return nil
	}
	if tok != json.Delim('[') {
		return errors.New(`decoding catalog: "services" is not a list`)
	}
	for dec.More() {
		var s Service
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("decoding catalog: %w", withoutValues(err))
		}
		if err := fn(&s); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return streamError(err)
	}
	return nil
}

// streamError keeps a read error (a body over the size cap, a broken connection) as it
// is, and rewrites a decoding error so that it quotes nothing of the body.
func streamError(err error) error {
	var tooLarge *BodyTooLargeError
	if errors.As(err, &tooLarge) {
		return err
	}
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return errors.New("decoding catalog: the body ends before the JSON object does")
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return fmt.Errorf("decoding catalog: %w", withoutValues(err))
	}
	return err
}

// decodeCatalogBytes is decodeCatalogStream over a body already read.
func decodeCatalogBytes(data []byte, fn func(*Service) error) error {
	return decodeCatalogStream(bytes.NewReader(data), fn)
}
