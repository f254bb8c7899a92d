// Command etcd is the upstream etcd server, kept in a module of its own so its
// version is not tied to the one Kubernetes links against.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
