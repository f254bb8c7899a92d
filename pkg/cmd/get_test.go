package cmd_test

import (
	"bytes"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestGetTables(t *testing.T) {
	now := storetest.SampleTime().Add(49 * time.Hour)
	b := storetest.SampleBroker()
	b.CreationTimestamp = storetest.SampleTime()
	c := storetest.SampleClass()
	c.CreationTimestamp = storetest.SampleTime()
	for _, tc := range []struct {
		name         string
		withNS, wide bool
		print        func(*bytes.Buffer, bool, bool) error
	}{
		{name: "brokers", print: func(w *bytes.Buffer, ns, wide bool) error {
			return printers.BrokerTable(w, []v1alpha1.Broker{*b}, ns, wide, now)
		}},
		{name: "brokers-wide-all", withNS: true, wide: true, print: func(w *bytes.Buffer, ns, wide bool) error {
			return printers.BrokerTable(w, []v1alpha1.Broker{*b}, ns, wide, now)
		}},
		{name: "classes", print: func(w *bytes.Buffer, ns, wide bool) error {
			return printers.ClassTable(w, []v1alpha1.ServiceClass{*c}, ns, wide, now)
		}},
		{name: "classes-wide", wide: true, print: func(w *bytes.Buffer, ns, wide bool) error {
			return printers.ClassTable(w, []v1alpha1.ServiceClass{*c}, ns, wide, now)
		}},
		{name: "plans-wide", wide: true, print: func(w *bytes.Buffer, ns, wide bool) error {
			var rows []printers.PlanRow
			for i := range c.Spec.Plans {
				rows = append(rows, printers.PlanRow{Class: c, Plan: &c.Spec.Plans[i]})
			}
			return printers.PlanTable(w, rows, ns, wide)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			assert.NilError(t, tc.print(&buf, tc.withNS, tc.wide))
			golden.Assert(t, buf.String(), "get/"+tc.name+".golden")
		})
	}
}
