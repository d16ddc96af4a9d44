package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func props(t *testing.T, fields map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(fields)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorder is a provider whose engine log is captured, with the time each line arrived.
type recorder struct {
	mu    sync.Mutex
	lines []string
	times []time.Time
}

func (r *recorder) provider() *commandProvider {
	return &commandProvider{emit: func(_ context.Context, urn, line string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.lines = append(r.lines, urn+": "+line)
		r.times = append(r.times, time.Now())
	}}
}

func TestDiffReplacesOnTriggersAndUpdatesOnOtherChanges(t *testing.T) {
	p := &commandProvider{}
	old := map[string]any{"create": "echo a", "triggers": []any{"x"}, "environment": map[string]any{"A": "1"}}
	cases := []struct {
		name            string
		news            map[string]any
		changes         pulumirpc.DiffResponse_DiffChanges
		diffs, replaces []string
	}{
		{"nothing changed", old, pulumirpc.DiffResponse_DIFF_NONE, nil, nil},
		{"triggers changed", map[string]any{"create": "echo a", "triggers": []any{"y"},
			"environment": map[string]any{"A": "1"}}, pulumirpc.DiffResponse_DIFF_SOME, []string{"triggers"},
			[]string{"triggers"}},
		{"environment changed", map[string]any{"create": "echo a", "triggers": []any{"x"},
			"environment": map[string]any{"A": "2"}}, pulumirpc.DiffResponse_DIFF_SOME, []string{"environment"}, nil},
		{"script changed", map[string]any{"create": "echo b", "triggers": []any{"x"},
			"environment": map[string]any{"A": "1"}}, pulumirpc.DiffResponse_DIFF_SOME, []string{"create"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := p.Diff(context.Background(), &pulumirpc.DiffRequest{
				OldInputs: props(t, old), News: props(t, c.news)})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetChanges() != c.changes || strings.Join(resp.GetDiffs(), ",") != strings.Join(c.diffs, ",") ||
				strings.Join(resp.GetReplaces(), ",") != strings.Join(c.replaces, ",") {
				t.Fatalf("got changes=%v diffs=%v replaces=%v", resp.GetChanges(), resp.GetDiffs(), resp.GetReplaces())
			}
			if c.replaces != nil && resp.GetDetailedDiff()["triggers"].GetKind() != pulumirpc.PropertyDiff_UPDATE_REPLACE {
				t.Fatalf("triggers not marked UPDATE_REPLACE: %v", resp.GetDetailedDiff())
			}
		})
	}
}

func TestCheckAcceptsUnknownsInPreviewAndRefusesWrongShapes(t *testing.T) {
	p := &commandProvider{}
	ok, err := p.Check(context.Background(), &pulumirpc.CheckRequest{News: props(t, map[string]any{
		"create": unknownValue, "environment": map[string]any{"KUBECONFIG": unknownValue}})})
	if err != nil || len(ok.GetFailures()) != 0 {
		t.Fatalf("unknowns refused: %v %v", err, ok.GetFailures())
	}
	bad, _ := p.Check(context.Background(), &pulumirpc.CheckRequest{News: props(t, map[string]any{
		"create": 3.0, "assetPaths": []any{"*"}})})
	if len(bad.GetFailures()) != 2 {
		t.Fatalf("want 2 failures (create not a string, assetPaths unsupported), got %v", bad.GetFailures())
	}
}

func TestPreviewRunsNothingAndLeavesOutputsUnknown(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	resp, err := (&commandProvider{}).Create(context.Background(), &pulumirpc.CreateRequest{
		Properties: props(t, map[string]any{"create": "touch " + marker}), Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran during preview")
	}
	if resp.GetProperties().GetFields()["stdout"].GetStringValue() != unknownValue {
		t.Fatal("stdout should be unknown in preview")
	}
}

func TestCreateUpdateDeleteRunTheirCommands(t *testing.T) {
	dir := t.TempDir()
	p := &commandProvider{}
	inputs := map[string]any{"create": "echo created >> log; echo out; echo err >&2", "dir": dir,
		"environment": map[string]any{"WHO": "kfistio"}, "delete": "echo \"deleted $PULUMI_COMMAND_STDOUT\" >> log"}
	created, err := p.Create(context.Background(), &pulumirpc.CreateRequest{Properties: props(t, inputs)})
	if err != nil {
		t.Fatal(err)
	}
	fields := created.GetProperties().GetFields()
	if fields["stdout"].GetStringValue() != "out" || fields["stderr"].GetStringValue() != "err" {
		t.Fatalf("outputs: %v", fields)
	}
	// With `update` set, an update runs it (not create): how this project keeps a step from repeating.
	withUpdate := map[string]any{}
	for k, v := range inputs {
		withUpdate[k] = v
	}
	withUpdate["update"] = "echo \"updated $WHO\" >> log"
	if _, err := p.Update(context.Background(), &pulumirpc.UpdateRequest{
		Olds: created.GetProperties(), News: props(t, withUpdate)}); err != nil {
		t.Fatal(err)
	}
	// Without `update`, an update runs create again (upstream semantics).
	if _, err := p.Update(context.Background(), &pulumirpc.UpdateRequest{
		Olds: created.GetProperties(), News: props(t, inputs)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Delete(context.Background(), &pulumirpc.DeleteRequest{Properties: created.GetProperties()}); err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	if string(log) != "created\nupdated kfistio\ncreated\ndeleted out\n" {
		t.Fatalf("steps ran as:\n%s", log)
	}
}

func TestAFailingCommandFailsTheStepNamingItsOutput(t *testing.T) {
	_, err := (&commandProvider{}).Create(context.Background(), &pulumirpc.CreateRequest{
		Properties: props(t, map[string]any{"create": "echo 'pods not on the new istiod' >&2; exit 3"})})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") ||
		!strings.Contains(err.Error(), "pods not on the new istiod") {
		t.Fatalf("error: %v", err)
	}
}

func TestOutputIsStreamedLineByLineWhileTheCommandRuns(t *testing.T) {
	r := &recorder{}
	start := time.Now()
	_, err := r.provider().Create(context.Background(), &pulumirpc.CreateRequest{
		Urn: "urn:rollout", Properties: props(t, map[string]any{
			"create": "echo 'deployment restarted'; sleep 0.5; echo 'rollout 1 of 2' >&2; printf 'done'"})})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	want := []string{"urn:rollout: deployment restarted", "urn:rollout: rollout 1 of 2", "urn:rollout: done"}
	if strings.Join(r.lines, "|") != strings.Join(want, "|") {
		t.Fatalf("lines: %q", r.lines)
	}
	if r.times[0].Sub(start) > 400*time.Millisecond || end.Sub(r.times[0]) < 400*time.Millisecond {
		t.Fatalf("the first line arrived %v after the start, %v before the end: not streamed",
			r.times[0].Sub(start), end.Sub(r.times[0]))
	}
}

func TestLoggingNoneSendsNothing(t *testing.T) {
	r := &recorder{}
	if _, err := r.provider().Create(context.Background(), &pulumirpc.CreateRequest{
		Properties: props(t, map[string]any{"create": "echo secret", "logging": "none"})}); err != nil {
		t.Fatal(err)
	}
	if len(r.lines) != 0 {
		t.Fatalf("logged %q", r.lines)
	}
}
