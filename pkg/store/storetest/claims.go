package storetest

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// EndedPID is the pid of a process of this host that has ended and been waited for (a
// run of the test binary itself that runs no test).
func EndedPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatalf("running %s: %v", os.Args[0], err)
	}
	return cmd.Process.Pid
}

// ClaimOfEndedProcess claims obj in memory for holder until expires, as a process of
// this host that has ended since (a killed command) would have left it: the claim is
// live, but nobody renews it (store.Lease.Abandoned).
func ClaimOfEndedProcess(t testing.TB, obj metav1.Object, holder string, expires time.Time) {
	t.Helper()
	if err := store.SetClaim(obj, holder, time.Minute, expires.Add(-time.Minute)); err != nil {
		t.Fatalf("claiming: %v", err)
	}
	l, _ := store.LeaseOf(obj)
	if l.Process == nil {
		t.Skip("this system names no process in claims")
	}
	l.Process.PID = EndedPID(t)
	v, err := json.Marshal(l)
	if err != nil {
		t.Fatalf("encoding the claim: %v", err)
	}
	a := obj.GetAnnotations()
	a[store.AnnotationClaim] = string(v)
	obj.SetAnnotations(a)
}
