// Command etcd is etcd's own server entry point (go.etcd.io/etcd/server/v3/etcdmain), built from the pinned module.
// etcd's repository keeps its main package in a module of its own with local replaces, so it cannot be built
// from the proxy directly; this wrapper calls the same function.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
