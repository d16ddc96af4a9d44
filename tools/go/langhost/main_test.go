package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// fakeVenv makes a virtualenv whose bin/python records its arguments and environment, then exits with code.
func fakeVenv(t *testing.T, code int) (root, venv string) {
	t.Helper()
	root = t.TempDir()
	venv = filepath.Join(root, ".venv")
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args\"\nenv > \"$(dirname \"$0\")/env\"\nexit " +
		string(rune('0'+code/10)) + string(rune('0'+code%10)) + "\n"
	if err := os.WriteFile(filepath.Join(venv, "bin", "python"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return root, venv
}

func info(root, venv string) *pulumirpc.ProgramInfo {
	opts, _ := structpb.NewStruct(map[string]any{"virtualenv": venv})
	return &pulumirpc.ProgramInfo{RootDirectory: root, ProgramDirectory: filepath.Join(root, "program"),
		EntryPoint: ".", Options: opts}
}

func TestPythonForFindsTheVirtualenvRelativeToTheProjectRoot(t *testing.T) {
	root, venv := fakeVenv(t, 0)
	for _, configured := range []string{".venv", venv} {
		python, err := pythonFor(info(root, configured))
		if err != nil || python != filepath.Join(venv, "bin", "python") {
			t.Fatalf("%s: got %q, %v", configured, python, err)
		}
	}
	if _, err := pythonFor(info(root, "missing")); err == nil || !strings.Contains(err.Error(), "setup command") {
		t.Fatalf("a missing virtualenv must name the fix, got %v", err)
	}
}

func TestRunHandsTheProgramEverythingTheSDKReads(t *testing.T) {
	root, venv := fakeVenv(t, 0)
	t.Setenv("PULUMI_CONFIG", "stale")
	h := &host{engineAddress: "127.0.0.1:1"}
	resp, err := h.Run(context.Background(), &pulumirpc.RunRequest{
		MonitorAddress: "127.0.0.1:2", Project: "kf-istio-migrate", Stack: "migrated", Pwd: root, DryRun: true,
		Parallel: 16, Config: map[string]string{"kf-istio-migrate:topology": "migrated"},
		Info: info(root, venv)})
	if err != nil || resp.GetError() != "" || resp.GetBail() {
		t.Fatalf("run: %v %v", err, resp)
	}
	args, _ := os.ReadFile(filepath.Join(venv, "bin", "args"))
	for _, want := range []string{"--monitor\n127.0.0.1:2\n", "--engine\n127.0.0.1:1\n", "--stack\nmigrated\n",
		"--dry_run\ntrue\n", "--parallel\n16\n", "--root_directory\n" + root + "\n",
		filepath.Join(root, "program", ".") + "\n"} {
		if !strings.Contains(string(args), want) {
			t.Fatalf("missing %q in the exec arguments:\n%s", want, args)
		}
	}
	env := map[string]string{}
	raw, _ := os.ReadFile(filepath.Join(venv, "bin", "env"))
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	var config map[string]string
	if err := json.Unmarshal([]byte(env["PULUMI_CONFIG"]), &config); err != nil ||
		config["kf-istio-migrate:topology"] != "migrated" {
		t.Fatalf("PULUMI_CONFIG = %q (the inherited one must not win)", env["PULUMI_CONFIG"])
	}
	if env["PULUMI_CONFIG_SECRET_KEYS"] != "[]" || env["VIRTUAL_ENV"] != venv ||
		!strings.HasPrefix(env["PATH"], filepath.Join(venv, "bin")+":") {
		t.Fatalf("environment: secret keys %q, VIRTUAL_ENV %q, PATH %q", env["PULUMI_CONFIG_SECRET_KEYS"],
			env["VIRTUAL_ENV"], env["PATH"])
	}
}

func TestRunReportsHowTheProgramEnded(t *testing.T) {
	for code, check := range map[int]func(*pulumirpc.RunResponse) bool{
		userActionableExit: func(r *pulumirpc.RunResponse) bool { return r.GetBail() && r.GetError() == "" },
		1: func(r *pulumirpc.RunResponse) bool {
			return !r.GetBail() && strings.Contains(r.GetError(), "non-zero exit code: 1")
		},
	} {
		root, venv := fakeVenv(t, code)
		resp, err := (&host{}).Run(context.Background(), &pulumirpc.RunRequest{Pwd: root, Info: info(root, venv)})
		if err != nil || !check(resp) {
			t.Fatalf("exit %d: %v %v", code, err, resp)
		}
	}
}
