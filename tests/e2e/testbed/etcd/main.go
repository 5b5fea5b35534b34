// Command etcd is the upstream etcd server, built from go.etcd.io/etcd/server/v3 for the
// trainsched test bed (see ../README.md).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
