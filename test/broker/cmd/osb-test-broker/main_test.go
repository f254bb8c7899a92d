package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

func TestRun_ServesUntilCancelledAndWritesTheURLFile(t *testing.T) {
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "url")
	stateFile := filepath.Join(dir, "state.json")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testio.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--username", "u", "--password", "p",
			"--print-url-file", urlFile, "--state-file", stateFile, "--async-delay", "10ms", "--quiet"}, &stdout, &stderr)
	}()
	var url string
	deadline := time.Now().Add(10 * time.Second)
	for url == "" {
		if data, err := os.ReadFile(urlFile); err == nil {
			url = strings.TrimSpace(string(data))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no URL file; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.Check(t, is.Contains(stdout.String(), "listening on "+url))

	req, _ := http.NewRequest(http.MethodGet, url+"/v2/catalog", nil)
	req.SetBasicAuth("u", "p")
	req.Header.Set("X-Broker-API-Version", "2.17")
	resp, err := http.DefaultClient.Do(req)
	assert.NilError(t, err)
	resp.Body.Close()
	assert.Check(t, is.Equal(resp.StatusCode, http.StatusOK))

	cancel()
	select {
	case err := <-done:
		assert.NilError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancellation")
	}
}

func TestRun_TLSWritesTheCAFile(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testio.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--tls", "--ca-file", caFile, "--bearer-token", "t", "--quiet"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), "listening on https://") {
		if time.Now().After(deadline) {
			t.Fatalf("not listening; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	pem, err := os.ReadFile(caFile)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(pem), "BEGIN CERTIFICATE"))
	cancel()
	assert.NilError(t, <-done)
}

func TestRun_RefusesBadArguments(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "flag provided but not defined"},
		{"positional argument", []string{"extra"}, "unexpected arguments"},
		{"ca file without tls", []string{"--ca-file", "x"}, "--ca-file needs --tls"},
		{"missing catalog", []string{"--catalog", "/does/not/exist.yaml"}, "reading catalog"},
		{"password without user", []string{"--password", "p"}, "Username and Password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, &out, &errOut)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestRun_PrintDemoCatalog(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.NilError(t, run(context.Background(), []string{"--print-demo-catalog"}, &out, &errOut))
	assert.Check(t, is.Contains(out.String(), "x-test-broker"))
}
