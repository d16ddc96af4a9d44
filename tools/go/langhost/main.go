// Command pulumi-language-python runs Pulumi Python programs for the Pulumi engine.
//
// The upstream host lives in its own Go module (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3),
// which the Go module proxy reachable here does not serve. This is a small host built on the served sdk/v3 module.
// It does what `pulumi preview/up/destroy` need: it starts the SDK's own pulumi-language-python-exec (installed
// beside this binary from the same sdk/v3 release) under the project's virtualenv and hands it the engine's
// monitor address, config and secret keys exactly as the upstream host does. Plugin discovery is left to the
// engine (providers are found as ambient plugins); dependency installation is the setup script's job.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	pbempty "google.golang.org/protobuf/types/known/emptypb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// version is stamped at build time with -X main.version=... (the Pulumi release this host is built against).
var version = "0.0.0-dev"

// userActionableExit is the exit code pulumi-language-python-exec uses after it has shown the user an error.
const userActionableExit = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddress string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pulumi-language-python ENGINE_ADDRESS (started by the Pulumi engine)")
		os.Exit(2)
	}
	h := &host{engineAddress: os.Args[len(os.Args)-1]}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "could not start the language host: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port) // the engine reads the port from our first line of stdout
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "language host stopped: %v\n", err)
		os.Exit(1)
	}
}

func (h *host) Handshake(_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engineAddress = req.GetEngineAddress()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *pbempty.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// GetRequiredPlugins and GetRequiredPackages report nothing: every provider is an ambient binary on PATH, and
// the engine starts each one when the program first registers a resource of its package.
func (h *host) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	python, err := pythonFor(req.GetInfo())
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	execScript := filepath.Join(filepath.Dir(self), "pulumi-language-python-exec")

	cmd := exec.CommandContext(ctx, python, append([]string{"-u", execScript}, execArgs(req, h.engineAddress)...)...)
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env, err = programEnv(req, python)
	if err != nil {
		return nil, err
	}
	err = cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return &pulumirpc.RunResponse{}, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == userActionableExit:
		return &pulumirpc.RunResponse{Bail: true}, nil
	case errors.As(err, &exitErr):
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode())}, nil
	default:
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not start %s: %v", python, err)}, nil
	}
}

// pythonFor returns the interpreter of the project's virtualenv (runtime option `virtualenv` in Pulumi.yaml,
// relative to the project root), or python3 from PATH when no virtualenv is configured.
func pythonFor(info *pulumirpc.ProgramInfo) (string, error) {
	venv := info.GetOptions().GetFields()["virtualenv"].GetStringValue()
	if venv == "" {
		return exec.LookPath("python3")
	}
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(info.GetRootDirectory(), venv)
	}
	python := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(python); err != nil {
		return "", fmt.Errorf("the virtualenv %s named in Pulumi.yaml has no bin/python; create it with the "+
			"project's setup command (see README.md)", venv)
	}
	return python, nil
}

// execArgs are the flags pulumi-language-python-exec parses, then the program and its arguments.
func execArgs(req *pulumirpc.RunRequest, engine string) []string {
	args := []string{
		"--monitor", req.GetMonitorAddress(),
		"--engine", engine,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--dry_run", strconv.FormatBool(req.GetDryRun()),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
		"--organization", req.GetOrganization(),
		"--root_directory", req.GetInfo().GetRootDirectory(),
	}
	program := req.GetProgram()
	if info := req.GetInfo(); info != nil && info.GetProgramDirectory() != "" {
		program = filepath.Join(info.GetProgramDirectory(), info.GetEntryPoint())
	}
	return append(append(args, program), req.GetArgs()...)
}

// programEnv passes config the way the SDK reads it (PULUMI_CONFIG, PULUMI_CONFIG_SECRET_KEYS) and puts the
// virtualenv first on PATH so that subprocesses of the program (kubectl from the venv, say) resolve the same way.
func programEnv(req *pulumirpc.RunRequest, python string) ([]string, error) {
	configMap := req.GetConfig()
	if configMap == nil {
		configMap = map[string]string{} // the SDK iterates PULUMI_CONFIG: "null" would crash it
	}
	config, err := json.Marshal(configMap)
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secrets, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	venvBin := filepath.Dir(python)
	env := []string{"PULUMI_CONFIG=" + string(config), "PULUMI_CONFIG_SECRET_KEYS=" + string(secrets),
		"PYTHONUNBUFFERED=1", "VIRTUAL_ENV=" + filepath.Dir(venvBin)}
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "PATH="):
			env = append(env, "PATH="+venvBin+string(os.PathListSeparator)+strings.TrimPrefix(kv, "PATH="))
		case strings.HasPrefix(kv, "PULUMI_CONFIG="), strings.HasPrefix(kv, "PULUMI_CONFIG_SECRET_KEYS="),
			strings.HasPrefix(kv, "VIRTUAL_ENV="):
		default:
			env = append(env, kv)
		}
	}
	return env, nil
}
