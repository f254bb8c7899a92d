package catalogsync

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Catalog is a broker's catalog, checked and restricted, kept compressed service by
// service. A catalog of tens of megabytes (mostly JSON Schemas, which compress well)
// then costs a small part of its size in memory between the fetch and the writes, and
// Apply decodes only the few services it is writing at a time.
type Catalog struct {
	services []packedService
	plans    int
}

type packedService struct {
	id string
	gz []byte
}

// Len is the number of services.
func (c *Catalog) Len() int { return len(c.services) }

// Plans is the number of plans of every service.
func (c *Catalog) Plans() int { return c.plans }

// NewCatalog packs cat (already checked and restricted) as a Catalog.
func NewCatalog(cat *osb.CatalogResponse) (*Catalog, error) {
	var p packer
	for i := range cat.Services {
		if err := p.add(&cat.Services[i]); err != nil {
			return nil, err
		}
	}
	return p.catalog(), nil
}

// Service decodes service i.
func (c *Catalog) Service(i int) (*osb.Service, error) {
	zr, err := gzip.NewReader(bytes.NewReader(c.services[i].gz))
	if err != nil {
		return nil, fmt.Errorf("reading back service %q of the catalog: %w", c.services[i].id, err)
	}
	var s osb.Service
	if err := json.NewDecoder(zr).Decode(&s); err != nil {
		return nil, fmt.Errorf("reading back service %q of the catalog: %w", c.services[i].id, err)
	}
	return &s, nil
}

// packer compresses services one by one; its buffers are reused.
type packer struct {
	services []packedService
	plans    int
	buf      bytes.Buffer
}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

func (p *packer) add(s *osb.Service) error {
	p.buf.Reset()
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&p.buf)
	if err := json.NewEncoder(zw).Encode(s); err != nil {
		return fmt.Errorf("keeping service %q of the catalog: %w", s.ID, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("keeping service %q of the catalog: %w", s.ID, err)
	}
	p.services = append(p.services, packedService{id: s.ID, gz: bytes.Clone(p.buf.Bytes())})
	p.plans += len(s.Plans)
	return nil
}

func (p *packer) catalog() *Catalog {
	return &Catalog{services: p.services, plans: p.plans}
}
