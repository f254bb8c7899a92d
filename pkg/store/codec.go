package store

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// maxDataBytes is what a ConfigMap's data may hold (the API server's limit is 1 MiB for
// keys and values together).
const maxDataBytes = 1 << 20

// body is the record as stored under DataKey. Format 1 kept the status in it too;
// format 2 keeps it under StatusDataKey.
type body struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       any    `json:"spec"`
}

// rawBody is body as read back.
type rawBody struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Spec       json.RawMessage `json:"spec"`
	Status     json.RawMessage `json:"status"`
	// SpecGzip is the compressed spec of a format 3 record.
	SpecGzip []byte `json:"specGzip"`
}

// compressedBody is body with its spec compressed (format 3).
type compressedBody struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	SpecGzip   []byte `json:"specGzip"`
}

// Encode returns the ConfigMap that holds record, as Update would write it: derived
// labels, the format, generation and spec-hash annotations, and the record under DataKey.
// record is not modified.
func Encode(record v1alpha1.Record) (*corev1.ConfigMap, error) {
	switch o := record.(type) {
	case *v1alpha1.Broker:
		return encode(brokerKind(), o, false)
	case *v1alpha1.ServiceClass:
		return encode(classKind(), o, false)
	case *v1alpha1.ServicePlanSchemas:
		return encode(schemasKind(), o, false)
	case *v1alpha1.ServiceInstance:
		return encode(instanceKind(), o, false)
	case *v1alpha1.ServiceBinding:
		return encode(bindingKind(), o, false)
	case *v1alpha1.CatalogAccess:
		return encode(accessKind(), o, false)
	}
	return nil, fmt.Errorf("store: %T is not a record type", record)
}

// Decode returns the record held by cm, whatever its kind (from LabelKind).
func Decode(cm *corev1.ConfigMap) (v1alpha1.Record, error) {
	switch k := cm.Labels[LabelKind]; k {
	case v1alpha1.KindBroker:
		return decode(brokerKind(), cm)
	case v1alpha1.KindServiceClass:
		return decode(classKind(), cm)
	case v1alpha1.KindServicePlanSchemas:
		return decode(schemasKind(), cm)
	case v1alpha1.KindServiceInstance:
		return decode(instanceKind(), cm)
	case v1alpha1.KindServiceBinding:
		return decode(bindingKind(), cm)
	case v1alpha1.KindCatalogAccess:
		return decode(accessKind(), cm)
	default:
		return nil, &Error{Reason: ReasonCorrupt, Op: "decode", Kind: k, Namespace: cm.Namespace, Name: cm.Name,
			Detail: fmt.Sprintf("label %s=%q is not a record kind this release knows", LabelKind, k), configMap: cm.Name}
	}
}

// NameProblem says what is wrong with name as the name of a record of kind k (a
// v1alpha1.Kind* constant), or "" when it makes a valid ConfigMap name: commands check a
// name with it before they contact the cluster.
func NameProblem(k, name string) string {
	if err := validateName("check", k, "", name); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e.Detail
		}
		return err.Error()
	}
	return ""
}

// validateName checks that name makes a valid ConfigMap name for kind k.
func validateName(op, k, namespace, name string) error {
	if name == "" {
		return &Error{Reason: ReasonInvalid, Op: op, Kind: k, Namespace: namespace, Detail: "the name is empty"}
	}
	if errs := validation.IsDNS1123Subdomain(ConfigMapName(k, name)); len(errs) > 0 {
		return &Error{Reason: ReasonInvalid, Op: op, Kind: k, Namespace: namespace, Name: name,
			Detail: fmt.Sprintf("the name must be lowercase letters, digits, '-' and '.', at most %d characters (%s)",
				validation.DNS1123SubdomainMaxLength-len(configMapPrefix(k)), strings.Join(errs, "; "))}
	}
	return nil
}

// encode builds the ConfigMap of obj. create is true for a new record: generation 1 and
// the kind's finalizer.
func encode[T v1alpha1.Record](k kind[T], obj T, create bool) (*corev1.ConfigMap, error) {
	obj = obj.DeepCopyObject().(T)
	meta, spec, status := k.parts(obj)
	if err := validateName("write", k.name, meta.Namespace, meta.Name); err != nil {
		return nil, err
	}

	specHash, err := hashSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the spec of %s %s/%s: %w", k.name, meta.Namespace, meta.Name, err)
	}
	annotations := recordAnnotations(meta, specHash, create)
	labels := k.recordLabels(obj, meta.Labels)

	finalizers := slices.Clone(meta.Finalizers)
	if create && k.finalize != nil && k.finalize(obj) && !slices.Contains(finalizers, Finalizer) {
		finalizers = append(finalizers, Finalizer)
	}

	data, compressed, err := encodeData(k.name, k.maxSpecBytes, meta, spec, status)
	if err != nil {
		return nil, err
	}
	if compressed {
		annotations[AnnotationFormat] = strconv.Itoa(formatCompressed)
	}

	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:                       ConfigMapName(k.name, meta.Name),
			Namespace:                  meta.Namespace,
			UID:                        meta.UID,
			ResourceVersion:            meta.ResourceVersion,
			CreationTimestamp:          meta.CreationTimestamp,
			DeletionTimestamp:          meta.DeletionTimestamp,
			DeletionGracePeriodSeconds: meta.DeletionGracePeriodSeconds,
			Labels:                     labels,
			Annotations:                annotations,
			OwnerReferences:            meta.OwnerReferences,
			Finalizers:                 finalizers,
		},
		Data: data,
	}, nil
}

// recordAnnotations are the record's annotations with the store's own: the plain
// format, the generation (one more when the spec changed) and the spec's hash. It sets
// meta.Generation.
func recordAnnotations(meta *metav1.ObjectMeta, specHash string, create bool) map[string]string {
	annotations := maps.Clone(meta.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	switch {
	case create || meta.Generation < 1:
		meta.Generation = 1
	case annotations[AnnotationSpecHash] != specHash:
		meta.Generation++
	}
	annotations[AnnotationFormat] = strconv.Itoa(formatPlain)
	annotations[AnnotationGeneration] = strconv.FormatInt(meta.Generation, 10)
	annotations[AnnotationSpecHash] = specHash
	return annotations
}

// recordLabels are the labels given, without the store's own, and the labels the store
// derives from obj.
func (k kind[T]) recordLabels(obj T, given map[string]string) map[string]string {
	labels := maps.Clone(given)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, key := range derivedLabels() {
		delete(labels, key)
	}
	for key := range labels {
		if strings.HasPrefix(key, IDLabelPrefix) {
			delete(labels, key)
		}
	}
	if k.ids != nil {
		for _, id := range k.ids(obj) {
			if id != "" {
				labels[IDLabel(id)] = "true"
			}
		}
	}
	for key, v := range k.labels(obj) {
		if v != "" {
			labels[key] = LabelValue(v)
		}
	}
	labels[LabelKind] = k.name
	labels[LabelManagedBy] = ManagedBy
	if obj.HasPendingWork() {
		labels[LabelPending] = "true"
	}
	return labels
}

// encodeData is the ConfigMap data of a record of kind k: plain JSON, or with the spec
// compressed (compressed) when plain JSON does not fit and the kind allows it
// (maxSpecBytes > 0).
func encodeData(k string, maxSpecBytes int, meta *metav1.ObjectMeta, spec, status any) (data map[string]string, compressed bool, err error) {
	data, err = marshalData(body{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: k, Spec: spec}, status)
	if err != nil {
		return nil, false, fmt.Errorf("encoding %s %s/%s: %w", k, meta.Namespace, meta.Name, err)
	}
	plain := dataSize(data)
	if plain <= maxDataBytes {
		return data, false, nil
	}
	tooLarge := func(detail string, args ...any) error {
		return &Error{Reason: ReasonTooLarge, Op: "write", Kind: k, Namespace: meta.Namespace, Name: meta.Name,
			Detail: fmt.Sprintf(detail, args...)}
	}
	if maxSpecBytes == 0 {
		return nil, false, tooLarge("%d bytes of JSON; records of this kind are never compressed", plain)
	}
	// Too large as JSON: compress the spec (format 3).
	if data, err = marshalCompressed(k, spec, status, maxSpecBytes); err != nil {
		var specTooLarge *specTooLargeError
		if errors.As(err, &specTooLarge) {
			return nil, false, tooLarge("%d bytes of JSON in its spec, more than the %d a reader decompresses", specTooLarge.size, maxSpecBytes)
		}
		return nil, false, fmt.Errorf("encoding %s %s/%s: %w", k, meta.Namespace, meta.Name, err)
	}
	if n := dataSize(data); n > maxDataBytes {
		return nil, false, tooLarge("%d bytes of JSON, %d bytes compressed", plain, n)
	}
	return data, true, nil
}

// hashSpec identifies a spec by the SHA-256 of its JSON encoding (the first 8 bytes, in
// hex): the same spec always gives the same value, however it was formatted when stored.
func hashSpec(spec any) (string, error) {
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(specJSON)
	return hex.EncodeToString(sum[:8]), nil
}

// marshalData writes the record's apiVersion, kind and spec under DataKey and its status
// (when the kind has one) under StatusDataKey, as indented JSON, or compact JSON when
// indented would not fit. HTML characters are not escaped: URLs with '&' stay readable.
func marshalData(b body, status any) (map[string]string, error) {
	for _, indent := range []string{"  ", ""} {
		rec, err := marshalJSON(b, indent)
		if err != nil {
			return nil, err
		}
		data := map[string]string{DataKey: string(rec)}
		if status != nil {
			st, err := marshalJSON(status, indent)
			if err != nil {
				return nil, err
			}
			data[StatusDataKey] = string(st)
		}
		if dataSize(data) <= maxDataBytes || indent == "" {
			return data, nil
		}
	}
	panic("unreachable")
}

// formatCompressed is the format of a record whose spec is compressed.
const formatCompressed = 3

// maxCompressedSpecBytes bounds a compressed spec once decompressed (kind.maxSpecBytes
// of the kinds that may be compressed: classes, plan schemas), so that a forged record
// cannot make a reader decompress, or decode, more than that: a class of 1,500 plans with
// schemas is about 3 MB.
const maxCompressedSpecBytes = 16 << 20

// specTooLargeError: a spec is larger than its kind's maxSpecBytes.
type specTooLargeError struct{ size int }

func (e *specTooLargeError) Error() string {
	return fmt.Sprintf("the spec is %d bytes of JSON", e.size)
}

// marshalCompressed writes the record with its spec as gzip-compressed compact JSON
// under DataKey, and its status, compact, under StatusDataKey. A spec of more than
// maxSpec bytes of JSON is a *specTooLargeError: a reader would refuse it.
func marshalCompressed(kind string, spec, status any, maxSpec int) (map[string]string, error) {
	specJSON, err := marshalJSON(spec, "")
	if err != nil {
		return nil, err
	}
	if len(specJSON) > maxSpec {
		return nil, &specTooLargeError{size: len(specJSON)}
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(specJSON); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	rec, err := marshalJSON(compressedBody{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: kind, SpecGzip: gz.Bytes()}, "")
	if err != nil {
		return nil, err
	}
	data := map[string]string{DataKey: string(rec)}
	if status != nil {
		st, err := marshalJSON(status, "")
		if err != nil {
			return nil, err
		}
		data[StatusDataKey] = string(st)
	}
	return data, nil
}

// gunzipSpec decompresses a format 3 spec, at most max bytes of it. It first only counts
// what the spec decompresses to, so that a small body that decompresses to gigabytes is
// refused having cost the reader no more than the decompressor's own buffers; a spec
// within the bound is then decompressed into a buffer of its exact size.
func gunzipSpec(gz []byte, max int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(io.Discard, io.LimitReader(zr, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(max) {
		return nil, fmt.Errorf("the spec decompresses to more than %d bytes, the most a reader decompresses", max)
	}
	if err := zr.Reset(bytes.NewReader(gz)); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, err
	}
	return out, nil
}

func marshalJSON(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dataSize is what data counts against the ConfigMap size limit.
func dataSize(data map[string]string) int {
	n := 0
	for k, v := range data {
		n += len(k) + len(v)
	}
	return n
}

// decode reads the record of kind k held by cm.
func decode[T v1alpha1.Record](k kind[T], cm *corev1.ConfigMap) (T, error) {
	var zero T
	name, hasPrefix := strings.CutPrefix(cm.Name, configMapPrefix(k.name))
	r := reading{kind: k.name, cm: cm, name: name}
	version, err := r.format(hasPrefix, k.maxSpecBytes > 0)
	if err != nil {
		return zero, err
	}
	raw, err := r.body(version, k.maxSpecBytes)
	if err != nil {
		return zero, err
	}

	obj := k.newRecord()
	meta, spec, status := k.parts(obj)
	if err := r.parts(raw, version, spec, status); err != nil {
		return zero, err
	}
	cm.ObjectMeta.DeepCopyInto(meta)
	meta.Name = name
	meta.ManagedFields = nil // they describe the ConfigMap's fields, not the record's
	meta.Generation = 0
	if g, ok := cm.Annotations[AnnotationGeneration]; ok {
		if meta.Generation, err = strconv.ParseInt(g, 10, 64); err != nil {
			return zero, r.corrupt("annotation %s=%q is not a number", AnnotationGeneration, g)
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind(k.name))
	return obj, nil
}

// reading is the decoding of one ConfigMap as a record of one kind.
type reading struct {
	kind string
	cm   *corev1.ConfigMap
	name string // the record's name: the ConfigMap's without the kind's prefix
}

// corrupt is the error of a ConfigMap that holds no readable record.
func (r reading) corrupt(format string, args ...any) error {
	return &Error{Reason: ReasonCorrupt, Op: "decode", Kind: r.kind, Namespace: r.cm.Namespace, Name: r.name,
		Detail: fmt.Sprintf(format, args...), configMap: r.cm.Name}
}

// unsupported is the error of a record in a format this release does not read.
func (r reading) unsupported(format string, args ...any) error {
	return &Error{Reason: ReasonUnsupportedFormat, Op: "decode", Kind: r.kind, Namespace: r.cm.Namespace, Name: r.name,
		Detail: fmt.Sprintf(format, args...)}
}

// format checks the ConfigMap's kind label, name and mutability, and returns the record
// format its annotation gives. mayCompress says whether records of the kind may be
// compressed.
func (r reading) format(hasPrefix, mayCompress bool) (int, error) {
	cm := r.cm
	if got := cm.Labels[LabelKind]; got != r.kind {
		return 0, r.corrupt("it is labelled %s=%q, not %q", LabelKind, got, r.kind)
	}
	if !hasPrefix || r.name == "" {
		return 0, r.corrupt("its name does not start with %q", configMapPrefix(r.kind))
	}
	if cm.Immutable != nil && *cm.Immutable {
		// The API server refuses every later write of its data: the record's progress
		// could never be stored, and a driver would try it again and again.
		return 0, r.corrupt("it is marked immutable: true, so its progress can never be written to it; "+
			"delete the ConfigMap and create the record again (%s records are never immutable)", r.kind)
	}
	format, ok := cm.Annotations[AnnotationFormat]
	if !ok {
		return 0, r.corrupt("annotation %s is missing", AnnotationFormat)
	}
	version, err := strconv.Atoi(format)
	if err != nil || version < 1 {
		return 0, r.corrupt("annotation %s=%q is not a format version", AnnotationFormat, format)
	}
	if version > FormatVersion {
		return 0, r.unsupported("record format %d; this release reads formats up to %d", version, FormatVersion)
	}
	if version >= formatCompressed && !mayCompress {
		// Checked before anything is decompressed: such a record is never written.
		return 0, r.corrupt("annotation %s=%d says its spec is compressed, and %s records are never compressed", AnnotationFormat, version, r.kind)
	}
	return version, nil
}

// body reads the record under DataKey, its spec decompressed (at most maxSpecBytes of
// it) in format 3.
func (r reading) body(version, maxSpecBytes int) (rawBody, error) {
	var raw rawBody
	data, ok := r.cm.Data[DataKey]
	if !ok {
		return raw, r.corrupt("data key %q is missing", DataKey)
	}
	// Compacting first makes embedded raw JSON (parameters, schemas) come back exactly as
	// it was given to Encode, which compacts it, whatever the indentation of the record.
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(data)); err != nil {
		return raw, r.corrupt("data key %q is not a JSON record: %v", DataKey, err)
	}
	if err := json.Unmarshal(compact.Bytes(), &raw); err != nil {
		return raw, r.corrupt("data key %q is not a JSON record: %v", DataKey, err)
	}
	if raw.APIVersion != v1alpha1.SchemeGroupVersion.String() {
		return raw, r.unsupported("apiVersion %q; this release reads %q", raw.APIVersion, v1alpha1.SchemeGroupVersion.String())
	}
	if raw.Kind != r.kind {
		return raw, r.corrupt("the record's kind is %q, not %q", raw.Kind, r.kind)
	}

	if version >= formatCompressed {
		if len(raw.SpecGzip) == 0 {
			return raw, r.corrupt("data key %q has no compressed spec (specGzip), which format %d records have", DataKey, version)
		}
		specJSON, err := gunzipSpec(raw.SpecGzip, maxSpecBytes)
		if err != nil {
			return raw, r.corrupt("data key %q: the compressed spec does not decompress: %v", DataKey, err)
		}
		raw.Spec = specJSON
	}
	return raw, nil
}

// parts decodes the spec and the status (under StatusDataKey from format 2 on) into
// the record's.
func (r reading) parts(raw rawBody, version int, spec, status any) error {
	if len(raw.Spec) > 0 {
		if err := json.Unmarshal(raw.Spec, spec); err != nil {
			return r.corrupt("reading the spec: %v", err)
		}
	}
	rawStatus := raw.Status
	if st, ok := r.cm.Data[StatusDataKey]; ok && version >= 2 {
		var c bytes.Buffer
		if err := json.Compact(&c, []byte(st)); err != nil {
			return r.corrupt("data key %q is not a JSON status: %v", StatusDataKey, err)
		}
		rawStatus = c.Bytes()
	}
	if status != nil && len(bytes.TrimSpace(rawStatus)) > 0 {
		if err := json.Unmarshal(rawStatus, status); err != nil {
			return r.corrupt("reading the status: %v", err)
		}
	}
	return nil
}
