package main

import (
	goruntime "runtime"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/snodo/snodo/runtime"
)

// keyNoPIDNamespace turns off the server's PID namespace on Linux.
const keyNoPIDNamespace = "no_pid_namespace"

func addPIDNamespaceFlag(f *pflag.FlagSet) {
	f.Bool("no-pid-namespace", false, "Linux: run the server without a PID namespace of its own (with one, everything the server started dies with snodo-run, even by SIGKILL)")
}

// pidNamespace is the server's PID namespace: on Linux, unless turned off,
// under snodo-run itself as init (see runtime.Init in main), falling back to
// the process group, /proc walk and subreaper where the kernel refuses one.
func pidNamespace(v *viper.Viper) *runtime.PIDNamespace {
	if goruntime.GOOS != "linux" || v.GetBool(keyNoPIDNamespace) {
		return nil
	}
	// This very binary, even if it was replaced or removed since it started.
	return &runtime.PIDNamespace{Init: "/proc/self/exe", Fallback: true}
}
