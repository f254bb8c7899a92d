// Command osb-test-broker runs the kubectl-catalog test broker: an Open
// Service Broker API v2.17 broker with a demo catalog and fault injection.
//
//	go run ./test/broker/cmd/osb-test-broker --listen 127.0.0.1:8080 --username admin --password secret
//
// See docs/test-broker.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "osb-test-broker:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends (SIGINT or SIGTERM in main).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("osb-test-broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		listen        = fs.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
		catalogFile   = fs.String("catalog", "", "catalog file (YAML or JSON); the embedded demo catalog when empty")
		printCatalog  = fs.Bool("print-demo-catalog", false, "print the embedded demo catalog and exit")
		username      = fs.String("username", "", "basic auth username")
		password      = fs.String("password", "", "basic auth password")
		bearer        = fs.String("bearer-token", "", "bearer token accepted instead of (or as well as) basic auth")
		useTLS        = fs.Bool("tls", false, "serve HTTPS with a generated self-signed certificate")
		caFile        = fs.String("ca-file", "", "with --tls, write the certificate to trust (PEM) to this file")
		stateFile     = fs.String("state-file", "", "persist instances and bindings to this JSON file")
		asyncDelay    = fs.Duration("async-delay", 0, "duration of every async operation, overriding the catalog (e.g. 500ms)")
		urlFile       = fs.String("print-url-file", "", "write the broker URL to this file once listening")
		plainOps      = fs.Bool("plain-operation-keys", false, "use operation keys that need no URL encoding")
		noAdmin       = fs.Bool("disable-admin", false, "turn off the /admin/ endpoints")
		adminRemote   = fs.Bool("admin-allow-remote", false, "let non-loopback clients use /admin/ (still authenticated)")
		quiet         = fs.Bool("quiet", false, "do not log each request")
		retryAfter    = fs.Duration("retry-after", 0, "Retry-After sent while operations are in progress, overriding the catalog; negative disables it")
		shutdownGrace = fs.Duration("shutdown-grace", 5*time.Second, "how long to let in-flight requests finish on SIGINT/SIGTERM")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (all options are flags; see -h)", fs.Args())
	}
	if *printCatalog {
		_, err := stdout.Write(broker.DefaultCatalogYAML())
		return err
	}
	if *caFile != "" && !*useTLS {
		return errors.New("--ca-file needs --tls")
	}
	if *username == "" && *bearer == "" {
		fmt.Fprintln(stderr, "warning: no --username/--password or --bearer-token: the broker accepts unauthenticated requests")
	}
	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelWarn
	}
	opts := broker.Options{
		Listen:             *listen,
		Username:           *username,
		Password:           *password,
		BearerToken:        *bearer,
		TLS:                *useTLS,
		StateFile:          *stateFile,
		AsyncDelay:         *asyncDelay,
		RetryAfter:         *retryAfter,
		PlainOperationKeys: *plainOps,
		DisableAdmin:       *noAdmin,
		AdminAllowRemote:   *adminRemote,
		Logger:             slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
	if *catalogFile != "" {
		c, err := broker.LoadCatalogFile(*catalogFile)
		if err != nil {
			return err
		}
		opts.Catalog = &c
	}
	b, err := broker.New(opts)
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	if *caFile != "" {
		if err := os.WriteFile(*caFile, b.CACertPEM(), 0o644); err != nil {
			b.Close()
			return fmt.Errorf("writing --ca-file: %w", err)
		}
	}
	if *urlFile != "" {
		// Write then rename, so a script polling for the file never reads a
		// partial URL.
		tmp := *urlFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(b.URL()+"\n"), 0o644); err == nil {
			err = os.Rename(tmp, *urlFile)
		}
		if err != nil {
			b.Close()
			return fmt.Errorf("writing --print-url-file: %w", err)
		}
	}
	fmt.Fprintf(stdout, "listening on %s\n", b.URL())
	<-ctx.Done()
	fmt.Fprintln(stderr, "shutting down")
	return shutdown(b, *shutdownGrace)
}

// shutdown closes the broker, giving in-flight requests a moment first.
func shutdown(b *broker.Broker, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return b.Shutdown(ctx)
}
