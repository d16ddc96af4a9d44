// Command pulumi-resource-command serves the `command:local:Command` resource of PyPI pulumi-command 1.2.1.
//
// The upstream provider (github.com/pulumi/pulumi-command/provider) is not served by the Go module proxy reachable
// here, at any version. This provider is built on the served sdk/v3 module and implements the subset of that
// resource this project uses, with upstream's semantics:
//   - create runs `create` (through `interpreter`, default /bin/sh -c) in `dir` with `environment` and `stdin`;
//     stdout and stderr (one trailing newline trimmed) become outputs; a non-zero exit fails the step;
//   - a change of `triggers` replaces the resource (the SDK also marks triggers[*] replaceOnChanges);
//   - a change of any other input updates it: `update` runs if set, else `create` runs again;
//   - delete runs `delete` if set; previous stdout/stderr are in PULUMI_COMMAND_STDOUT/STDERR;
//   - nothing runs during preview: stdout/stderr are unknown there;
//   - while a command runs, each line it writes is sent to the engine as it comes (`logging`: stdoutAndStderr by
//     default, stdout, stderr or none), so the operator sees a rollout's progress live, as upstream streams it.
//
// Assets, archives and remote connections are not implemented and are refused by Check.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// version is stamped at build time (-X main.version=...): the PyPI pulumi-command release whose schema we serve.
var version = "0.0.0-dev"

const (
	commandType  = "command:local:Command"
	unknownValue = "04da6b54-80e4-46f7-96ec-b56ff0331ba9" // the engine's marker for a value not known in preview
)

var (
	stringInputs = []string{"create", "update", "delete", "dir", "stdin", "logging"}
	inputKeys    = append([]string{"interpreter", "environment", "triggers", "addPreviousOutputInEnv"}, stringInputs...)
	refusedKeys  = []string{"assetPaths", "archivePaths"}
)

type commandProvider struct {
	pulumirpc.UnimplementedResourceProviderServer
	// emit sends one line of a running command's output to the engine, attributed to the resource urn.
	emit func(ctx context.Context, urn, line string)
}

func main() {
	err := provider.Main("command", func(host *provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return &commandProvider{emit: func(ctx context.Context, urn, line string) {
			_ = host.Log(ctx, diag.Info, resource.URN(urn), line)
		}}, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func (p *commandProvider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (p *commandProvider) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{SupportsPreview: true}, nil
}

func (p *commandProvider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (p *commandProvider) DiffConfig(context.Context, *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
}

func (p *commandProvider) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	if req.GetType() != "" && req.GetType() != commandType {
		return nil, fmt.Errorf("this provider serves only %s, not %s", commandType, req.GetType())
	}
	return &pulumirpc.CheckResponse{Inputs: req.GetNews(), Failures: checkInputs(req.GetNews().GetFields())}, nil
}

// checkInputs reports inputs of the wrong shape; unknown values (preview) are accepted.
func checkInputs(in map[string]*structpb.Value) []*pulumirpc.CheckFailure {
	var failures []*pulumirpc.CheckFailure
	fail := func(key, reason string) {
		failures = append(failures, &pulumirpc.CheckFailure{Property: key, Reason: reason})
	}
	for _, key := range stringInputs {
		if v, ok := in[key]; ok && !isUnknown(v) && v.GetKind() != nil {
			if _, isString := v.GetKind().(*structpb.Value_StringValue); !isString {
				fail(key, key+" must be a string")
			}
		}
	}
	if v, ok := in["interpreter"]; ok && !isUnknown(v) {
		for _, item := range v.GetListValue().GetValues() {
			if _, isString := item.GetKind().(*structpb.Value_StringValue); !isString {
				fail("interpreter", "interpreter must be a list of strings")
			}
		}
	}
	if v, ok := in["environment"]; ok && !isUnknown(v) {
		for name, item := range v.GetStructValue().GetFields() {
			if _, isString := item.GetKind().(*structpb.Value_StringValue); !isString && !isUnknown(item) {
				fail("environment", "environment variable "+name+" must be a string")
			}
		}
	}
	for _, key := range refusedKeys {
		if v, ok := in[key]; ok && len(v.GetListValue().GetValues()) > 0 {
			fail(key, key+" is not supported by this provider build (see tools/go/command-provider)")
		}
	}
	return failures
}

func (p *commandProvider) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds := req.GetOldInputs()
	if olds == nil {
		olds = req.GetOlds()
	}
	var changed, replaces []string
	detailed := map[string]*pulumirpc.PropertyDiff{}
	for _, key := range inputKeys {
		o, n := olds.GetFields()[key], req.GetNews().GetFields()[key]
		if proto.Equal(o, n) || (isEmpty(o) && isEmpty(n)) {
			continue
		}
		changed = append(changed, key)
		kind := pulumirpc.PropertyDiff_UPDATE
		if key == "triggers" {
			replaces = append(replaces, key)
			kind = pulumirpc.PropertyDiff_UPDATE_REPLACE
		}
		detailed[key] = &pulumirpc.PropertyDiff{Kind: kind, InputDiff: true}
	}
	changes := pulumirpc.DiffResponse_DIFF_NONE
	if len(changed) > 0 {
		changes = pulumirpc.DiffResponse_DIFF_SOME
	}
	return &pulumirpc.DiffResponse{Changes: changes, Diffs: changed, Replaces: replaces,
		DetailedDiff: detailed, HasDetailedDiff: true}, nil
}

func (p *commandProvider) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	id := "preview"
	if !req.GetPreview() {
		id = newID()
	}
	out, err := runStep(ctx, req.GetProperties(), nil, "create", req.GetPreview(), req.GetTimeout(),
		p.logger(ctx, req.GetUrn(), req.GetProperties()))
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CreateResponse{Id: id, Properties: out}, nil
}

func (p *commandProvider) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	step := "create"
	if req.GetNews().GetFields()["update"].GetStringValue() != "" {
		step = "update"
	}
	out, err := runStep(ctx, req.GetNews(), req.GetOlds(), step, req.GetPreview(), req.GetTimeout(),
		p.logger(ctx, req.GetUrn(), req.GetNews()))
	if err != nil {
		return nil, err
	}
	return &pulumirpc.UpdateResponse{Properties: out}, nil
}

func (p *commandProvider) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	if _, err := runStep(ctx, req.GetProperties(), req.GetProperties(), "delete", false, req.GetTimeout(),
		p.logger(ctx, req.GetUrn(), req.GetProperties())); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// Read keeps the recorded state: a command has nothing in the world to read back.
func (p *commandProvider) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
}

// logger returns how a running command's lines reach the engine: per the `logging` input, or not at all.
func (p *commandProvider) logger(ctx context.Context, urn string, inputs *structpb.Struct) *streams {
	mode := inputs.GetFields()["logging"].GetStringValue()
	if p.emit == nil || mode == "none" {
		return nil
	}
	line := func(text string) { p.emit(ctx, urn, text) }
	s := &streams{}
	if mode == "" || mode == "stdoutAndStderr" || mode == "stdout" {
		s.stdout = &lineWriter{mu: &s.mu, emit: line}
	}
	if mode == "" || mode == "stdoutAndStderr" || mode == "stderr" {
		s.stderr = &lineWriter{mu: &s.mu, emit: line}
	}
	return s
}

// streams are the line writers a command's stdout and stderr are copied to (nil: not logged).
type streams struct {
	mu             sync.Mutex
	stdout, stderr *lineWriter
}

// lineWriter hands each complete line written to it to emit, as soon as the line is complete.
type lineWriter struct {
	mu   *sync.Mutex
	buf  []byte
	emit func(string)
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// flush emits a last line that had no newline.
func (w *lineWriter) flush() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}

// runStep runs the inputs' command for step (create, update or delete) and returns the new state: the inputs plus
// stdout and stderr. In preview, or when the step has no command, nothing runs and the outputs carry over.
func runStep(ctx context.Context, inputs, previous *structpb.Struct, step string, preview bool, timeout float64,
	log *streams,
) (*structpb.Struct, error) {
	state := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for _, key := range inputKeys {
		if v, ok := inputs.GetFields()[key]; ok {
			state.Fields[key] = v
		}
	}
	for _, key := range []string{"stdout", "stderr"} {
		state.Fields[key] = structpb.NewStringValue("")
		if prev, ok := previous.GetFields()[key]; ok {
			state.Fields[key] = prev
		}
	}
	script := inputs.GetFields()[step].GetStringValue()
	if preview {
		if script != "" {
			state.Fields["stdout"], state.Fields["stderr"] = structpb.NewStringValue(unknownValue), structpb.NewStringValue(unknownValue)
		}
		return state, nil
	}
	if script == "" {
		return state, nil
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeout*float64(time.Second)))
		defer cancel()
	}
	stdout, stderr, err := run(ctx, inputs.GetFields(), previous.GetFields(), script, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w running %q:\nstdout: %s\nstderr: %s", step, err, script, stdout, stderr)
	}
	state.Fields["stdout"], state.Fields["stderr"] = structpb.NewStringValue(stdout), structpb.NewStringValue(stderr)
	return state, nil
}

func run(ctx context.Context, in, previous map[string]*structpb.Value, script string, log *streams,
) (string, string, error) {
	interpreter := []string{"/bin/sh", "-c"}
	if list := in["interpreter"].GetListValue().GetValues(); len(list) > 0 {
		interpreter = nil
		for _, item := range list {
			interpreter = append(interpreter, item.GetStringValue())
		}
	}
	cmd := exec.CommandContext(ctx, interpreter[0], append(interpreter[1:], script)...)
	cmd.Dir = in["dir"].GetStringValue()
	cmd.Stdin = strings.NewReader(in["stdin"].GetStringValue())
	cmd.Env = os.Environ()
	for name, value := range in["environment"].GetStructValue().GetFields() {
		cmd.Env = append(cmd.Env, name+"="+value.GetStringValue())
	}
	addPrevious, set := in["addPreviousOutputInEnv"].GetKind().(*structpb.Value_BoolValue)
	if !set || addPrevious.BoolValue {
		cmd.Env = append(cmd.Env, "PULUMI_COMMAND_STDOUT="+previous["stdout"].GetStringValue(),
			"PULUMI_COMMAND_STDERR="+previous["stderr"].GetStringValue())
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if log != nil && log.stdout != nil {
		cmd.Stdout = io.MultiWriter(&stdout, log.stdout)
	}
	if log != nil && log.stderr != nil {
		cmd.Stderr = io.MultiWriter(&stderr, log.stderr)
	}
	err := cmd.Run()
	if log != nil {
		log.stdout.flush()
		log.stderr.flush()
	}
	return strings.TrimSuffix(stdout.String(), "\n"), strings.TrimSuffix(stderr.String(), "\n"), err
}

func isUnknown(v *structpb.Value) bool { return v.GetStringValue() == unknownValue }

func isEmpty(v *structpb.Value) bool {
	if v == nil {
		return true
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return true
	case *structpb.Value_ListValue:
		return len(k.ListValue.GetValues()) == 0
	case *structpb.Value_StructValue:
		return len(k.StructValue.GetFields()) == 0
	}
	return false
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
