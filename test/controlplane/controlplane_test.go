package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStart_PortTakenBeforeBind takes etcd's peer port, and then the API server's,
// between the moment Start chooses its ports and the moment the component binds them,
// as another process on the machine may: Start starts again on other ports each time.
func TestStart_PortTakenBeforeBind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	var (
		mu      sync.Mutex
		calls   int
		holders []net.Listener
	)
	pickPorts = func(n int) ([]int, error) {
		ports, err := freePorts(n)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		// The first attempt loses etcd's peer port (ports[1]), the second the API
		// server's (ports[2]).
		if calls <= 2 {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", ports[calls]))
			if err != nil {
				return nil, err
			}
			holders = append(holders, l)
		}
		return ports, nil
	}
	t.Cleanup(func() {
		pickPorts = freePorts
		for _, l := range holders {
			l.Close()
		}
	})
	var log bytes.Buffer
	cp, err := Start(context.Background(), Options{Dir: t.TempDir(), Log: &log})
	if err != nil {
		t.Fatalf("Start: %v\nlog:\n%s", err, log.String())
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if calls != 3 {
		t.Errorf("Start chose ports %d times, want 3 (two taken, then free)\nlog:\n%s", calls, log.String())
	}
	for _, want := range []string{"etcd exited", "kube-apiserver exited"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	client, err := cp.Client(AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("listing namespaces on the control plane started: %v", err)
	}
}
