package infra_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	runpb "cloud.google.com/go/run/apiv2/runpb"
	schedulerpb "cloud.google.com/go/scheduler/apiv1/schedulerpb"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/global"
	"github.com/awslabs/goformation/v7/cloudformation/s3"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/cloudformation/sqs"
	"github.com/awslabs/goformation/v7/intrinsics"
	"google.golang.org/protobuf/encoding/protojson"
	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
)

// sampleKeys is what an operator would store as CAIRN_KEYS.
var sampleKeys = "w1:worker:" + auth.HashSecret("w") + ",ops:admin:" + auth.HashSecret("a")

// claimHold is the longest the engine holds a claim under cfg: asked of
// the engine itself, not recomputed here.
func claimHold(t *testing.T, c *config.Config) time.Duration {
	t.Helper()
	e, err := engine.New(mem.New(), c.EngineConfig(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return e.ClaimHold()
}

// ---- Permissions derived from the code ----

// methodCalls returns the names of the methods called in the non-test Go
// files of dir on a receiver whose expression ends in recvField (e.g.
// "client" for d.client.GetObject(…)), or on anything when recvField is "".
func methodCalls(t *testing.T, dir, recvField string, only []string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if recvField != "" {
				inner, ok := sel.X.(*ast.SelectorExpr)
				if !ok || inner.Sel.Name != recvField {
					return true
				}
			}
			if only == nil || slices.Contains(only, sel.Sel.Name) {
				seen[sel.Sel.Name] = true
			}
			return true
		})
	}
	return slices.Sorted(maps.Keys(seen))
}

// actionsFor maps calls to the permissions they need; a call the table
// does not know fails the test, so a new call in a driver cannot go
// unnoticed by the templates.
func actionsFor(t *testing.T, what string, calls []string, table map[string][]string) []string {
	t.Helper()
	set := map[string]bool{}
	for _, c := range calls {
		acts, ok := table[c]
		if !ok {
			t.Errorf("%s calls %s, which this test does not map to permissions: extend the table and the templates", what, c)
			continue
		}
		for _, a := range acts {
			set[a] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// s3Actions: what blob/s3 calls on its S3 client.
func s3Actions(t *testing.T) (objects, bucket []string) {
	calls := methodCalls(t, "blob/s3", "client", nil)
	if len(calls) == 0 {
		t.Fatal("found no S3 client call in blob/s3")
	}
	objectTable := map[string][]string{
		"GetObject": {"s3:GetObject"}, "HeadObject": {"s3:GetObject"},
		"PutObject": {"s3:PutObject"}, "CopyObject": {"s3:GetObject", "s3:PutObject"},
		"CreateMultipartUpload": {"s3:PutObject"}, "UploadPart": {"s3:PutObject"}, "CompleteMultipartUpload": {"s3:PutObject"},
		"AbortMultipartUpload": {"s3:AbortMultipartUpload"},
		"DeleteObject":         {"s3:DeleteObject"}, "DeleteObjects": {"s3:DeleteObject"},
		"ListObjectsV2": nil, "ListObjects": nil, "HeadBucket": nil,
	}
	bucketTable := map[string][]string{"ListObjectsV2": {"s3:ListBucket"}, "ListObjects": {"s3:ListBucket"}, "HeadBucket": {"s3:ListBucket"}}
	objects = actionsFor(t, "blob/s3", calls, objectTable)
	for _, c := range calls {
		for _, a := range bucketTable[c] {
			if !slices.Contains(bucket, a) {
				bucket = append(bucket, a)
			}
		}
	}
	sort.Strings(bucket)
	return objects, bucket
}

// busCalls returns the gocloud pubsub calls (Send, Receive, Ack, Nack) a
// notify driver makes, in its own package or in the notify/internal
// packages it imports.
func busCalls(t *testing.T, dir string) []string {
	t.Helper()
	dirs := []string{dir}
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join("..", dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if rest, ok := strings.CutPrefix(p, "github.com/cairn-dev/cairn/"); ok && strings.HasPrefix(rest, "notify/internal/") && !slices.Contains(dirs, rest) {
				dirs = append(dirs, rest)
			}
		}
	}
	set := map[string]bool{}
	for _, d := range dirs {
		for _, c := range methodCalls(t, d, "", []string{"Send", "Receive", "Ack", "Nack"}) {
			set[c] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// sqsActions: what notify/sqs calls on its SQS client, split by side
// (the batch calls need the single call's permission).
func sqsActions(t *testing.T) (publish, subscribe []string) {
	calls := methodCalls(t, "notify/sqs", "client", nil)
	publish = actionsFor(t, "notify/sqs (publish)", slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return !strings.HasPrefix(c, "SendMessage") }),
		map[string][]string{"SendMessage": {"sqs:SendMessage"}, "SendMessageBatch": {"sqs:SendMessage"}})
	subscribe = actionsFor(t, "notify/sqs (subscribe)", slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return strings.HasPrefix(c, "SendMessage") }),
		map[string][]string{
			"ReceiveMessage": {"sqs:ReceiveMessage"},
			"DeleteMessage":  {"sqs:DeleteMessage"}, "DeleteMessageBatch": {"sqs:DeleteMessage"},
			"ChangeMessageVisibility": {"sqs:ChangeMessageVisibility"}, "ChangeMessageVisibilityBatch": {"sqs:ChangeMessageVisibility"},
		})
	if len(publish) == 0 || len(subscribe) == 0 {
		t.Fatalf("notify/sqs: found client calls %v; expected sends and receives", calls)
	}
	return publish, subscribe
}

// pubsubRoles: the predefined roles notify/gcppubsub's calls need, by side
// (Send: pubsub.topics.publish; Receive, Ack, Nack:
// pubsub.subscriptions.consume).
func pubsubRoles(t *testing.T) (publish, subscribe string) {
	calls := busCalls(t, "notify/gcppubsub")
	if !slices.Contains(calls, "Send") || !slices.Contains(calls, "Receive") {
		t.Fatalf("notify/gcppubsub: found calls %v; expected sends and receives", calls)
	}
	return "roles/pubsub.publisher", "roles/pubsub.subscriber"
}

// gcsPermissions: what blob/gcs calls on its gocloud bucket.
func gcsPermissions(t *testing.T) []string {
	calls := methodCalls(t, "blob/gcs", "b", nil)
	// Listing lives in blob/internal/gclist, shared with the azure driver.
	calls = append(calls, methodCalls(t, "blob/internal/gclist", "", []string{"ListPage"})...)
	write := []string{"storage.objects.create", "storage.objects.delete"} // replacing an object needs delete
	return actionsFor(t, "blob/gcs", calls, map[string][]string{
		"NewReader": {"storage.objects.get"}, "NewRangeReader": {"storage.objects.get"}, "ReadAll": {"storage.objects.get"},
		"Attributes": {"storage.objects.get"}, "Exists": {"storage.objects.get"},
		"NewWriter": write, "WriteAll": write, "Upload": write,
		"Copy":   append([]string{"storage.objects.get"}, write...),
		"Delete": {"storage.objects.delete"},
		"List":   {"storage.objects.list"}, "ListPage": {"storage.objects.list"},
		"Close": nil, "As": nil, "ErrorAs": nil, "IsAccessible": nil,
	})
}

// ---- AWS: the SAM template ----

// refHandlers keep references visible after intrinsic processing:
// Ref X → "ref.X" (or the parameter's default), GetAtt X.A → "getatt.X.A",
// Sub substitutes those forms. goformation's own handlers drop GetAtt.
func refHandlers(overrides map[string]any) map[string]intrinsics.IntrinsicHandler {
	pseudo := map[string]string{"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::StackName": "cairn", "AWS::Partition": "aws"}
	ref := func(name string, template any) any {
		if name == "AWS::NoValue" {
			return nil
		}
		if v, ok := pseudo[name]; ok {
			return v
		}
		if v, ok := overrides[name]; ok {
			return v
		}
		if tm, ok := template.(map[string]any); ok {
			if ps, ok := tm["Parameters"].(map[string]any); ok {
				if p, ok := ps[name].(map[string]any); ok {
					return p["Default"]
				}
			}
		}
		return "ref." + name
	}
	return map[string]intrinsics.IntrinsicHandler{
		"Ref": func(_ string, in any, template any) any {
			if s, ok := in.(string); ok {
				return ref(s, template)
			}
			return nil
		},
		"Fn::GetAtt": func(_ string, in any, _ any) any {
			switch v := in.(type) {
			case []any:
				parts := make([]string, len(v))
				for i, p := range v {
					parts[i] = fmt.Sprint(p)
				}
				return "getatt." + strings.Join(parts, ".")
			case string:
				return "getatt." + v
			}
			return nil
		},
		"Fn::Sub": func(_ string, in any, template any) any {
			s, ok := in.(string)
			if !ok {
				return nil
			}
			return regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(s, func(m string) string {
				name := m[2 : len(m)-1]
				if strings.Contains(name, ".") && !strings.HasPrefix(name, "AWS::") {
					return "getatt." + name
				}
				return fmt.Sprint(ref(name, template))
			})
		},
	}
}

type samTemplate struct {
	tmpl *cloudformation.Template
	raw  map[string]any // the processed template, for what goformation does not model (events)
}

func loadSAM(t *testing.T, params map[string]any) samTemplate {
	t.Helper()
	data, err := os.ReadFile("aws/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts := &intrinsics.ProcessorOptions{IntrinsicHandlerOverrides: refHandlers(params), EvaluateConditions: true}
	processed, err := intrinsics.ProcessYAML(data, opts)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := goformation.ParseJSONWithOptions(processed, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		t.Fatalf("goformation: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(processed, &raw); err != nil {
		t.Fatal(err)
	}
	return samTemplate{tmpl: tmpl, raw: raw}
}

// function is a SAM function with the Globals merged in (goformation does
// not merge them): scalar properties fall back to Globals, environment
// variables merge with the function's winning.
type function struct {
	name    string
	fn      *serverless.Function
	runtime string
	handler string
	arch    []string
	timeout int
	env     map[string]string
	events  map[string]event
}

type event struct {
	Type       string
	Properties map[string]any
}

func (s samTemplate) function(t *testing.T, name string) function {
	t.Helper()
	fn, err := s.tmpl.GetServerlessFunctionWithName(name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.tmpl.GetServerlessGlobalFunction()
	if err != nil {
		g = &global.Function{}
	}
	str := func(own, global *string) string {
		if own != nil {
			return *own
		}
		if global != nil {
			return *global
		}
		return ""
	}
	f := function{name: name, fn: fn, runtime: str(fn.Runtime, g.Runtime), handler: str(fn.Handler, g.Handler), env: map[string]string{}}
	f.arch = fn.Architectures
	if f.arch == nil && g.Architectures != nil {
		f.arch = *g.Architectures
	}
	if fn.Timeout != nil {
		f.timeout = *fn.Timeout
	} else if g.Timeout != nil {
		f.timeout = *g.Timeout
	} else {
		f.timeout = 3 // Lambda's default
	}
	if g.Environment != nil {
		for k, v := range g.Environment.Variables {
			f.env[k] = v
		}
	}
	if fn.Environment != nil {
		for k, v := range fn.Environment.Variables {
			f.env[k] = v
		}
	}
	// Events: goformation's union type cannot hold ScheduleV2; read them
	// from the processed template.
	res := s.raw["Resources"].(map[string]any)[name].(map[string]any)
	props := res["Properties"].(map[string]any)
	if evs, ok := props["Events"].(map[string]any); ok {
		b, _ := json.Marshal(evs)
		json.Unmarshal(b, &f.events)
	}
	return f
}

// environ is the function's environment as Lambda gives it to the process.
func (f function) environ() []string {
	env := []string{"AWS_LAMBDA_RUNTIME_API=127.0.0.1:9001", "AWS_REGION=us-east-1"}
	for k, v := range f.env {
		env = append(env, k+"="+v)
	}
	return env
}

type statement struct {
	Effect   string
	Action   []string
	Resource []string
}

func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// roleStatements returns the Allow statements of a role's inline policies.
func (s samTemplate) roleStatements(t *testing.T, roleRef string) []statement {
	t.Helper()
	name := strings.TrimSuffix(strings.TrimPrefix(roleRef, "getatt."), ".Arn")
	role, err := s.tmpl.GetIAMRoleWithName(name)
	if err != nil {
		t.Fatalf("role %q: %v", roleRef, err)
	}
	if len(role.ManagedPolicyArns) > 0 {
		t.Errorf("role %s attaches managed policies %v: least privilege wants inline statements on this stack's resources", name, role.ManagedPolicyArns)
	}
	var out []statement
	for _, p := range role.Policies {
		doc, _ := p.PolicyDocument.(map[string]any)
		sts, _ := doc["Statement"].([]any)
		for _, raw := range sts {
			st := raw.(map[string]any)
			s := statement{Effect: fmt.Sprint(st["Effect"]), Action: stringList(st["Action"]), Resource: stringList(st["Resource"])}
			if st["NotAction"] != nil || st["NotResource"] != nil {
				t.Errorf("role %s: NotAction/NotResource grant more than they name", name)
			}
			out = append(out, s)
		}
	}
	return out
}

// grants returns the actions granted per resource.
func grants(sts []statement) map[string][]string {
	g := map[string][]string{}
	for _, s := range sts {
		if s.Effect != "Allow" {
			continue
		}
		for _, r := range s.Resource {
			for _, a := range s.Action {
				if !slices.Contains(g[r], a) {
					g[r] = append(g[r], a)
				}
			}
		}
	}
	for r := range g {
		sort.Strings(g[r])
	}
	return g
}

func TestSAMTemplate(t *testing.T) {
	// CloudFormation resolves the Keys parameter (an SSM parameter name)
	// to the parameter's value: stand in a valid one.
	sam := loadSAM(t, map[string]any{"Keys": sampleKeys})
	objects, list := s3Actions(t)
	publish, subscribe := sqsActions(t)
	t.Logf("from the code: S3 objects %v, bucket %v; SQS publish %v, subscribe %v", objects, list, publish, subscribe)

	// The dashboard function is the API's code built with the dashboard
	// (make lambda's cairn-dashboard zip); it claims nothing, so it has no
	// bus: hints are for claims, and an SQS message reaches one receiver.
	fns := map[string]config.Role{"ApiFunction": config.API, "ClaimsFunction": config.API, "DashboardFunction": config.API, "ReaperFunction": config.Reaper}
	const dashboard = "DashboardFunction"
	if got := slices.Sorted(maps.Keys(sam.tmpl.GetAllServerlessFunctionResources())); !slices.Equal(got, slices.Sorted(maps.Keys(fns))) {
		t.Fatalf("functions %v, want %v", got, slices.Sorted(maps.Keys(fns)))
	}
	for name, role := range fns {
		t.Run(name, func(t *testing.T) {
			f := sam.function(t, name)
			// Packaging: what make lambda builds.
			if f.runtime != "provided.al2023" || f.handler != "bootstrap" {
				t.Errorf("runtime %q handler %q, want provided.al2023 and bootstrap", f.runtime, f.handler)
			}
			if f.fn.CodeUri == nil || f.fn.CodeUri.String == nil {
				t.Fatal("no CodeUri")
			}
			fnDir := map[config.Role]string{config.API: "api", config.Reaper: "reaper"}[role]
			if name == dashboard {
				fnDir = "dashboard"
			}
			if len(f.arch) != 1 {
				t.Fatalf("architectures %v", f.arch)
			}
			goarch := map[string]string{"arm64": "arm64", "x86_64": "amd64"}[f.arch[0]]
			if want := fmt.Sprintf("../../dist/cairn-%s-%s.zip", fnDir, goarch); *f.fn.CodeUri.String != want {
				t.Errorf("CodeUri %q, want %q (make lambda's output for %s)", *f.fn.CodeUri.String, want, f.arch[0])
			}

			// Environment: the binary's own validation accepts it.
			c, err := config.FromEnv(role, f.environ())
			if err != nil {
				t.Fatalf("the %s binary would refuse this environment:\n%v", role, err)
			}
			if len(c.Warnings) > 0 {
				t.Errorf("warnings at start: %v", c.Warnings)
			}
			if !strings.HasPrefix(c.Blob, "s3://ref.Bucket?") || (name == dashboard) != (c.Notify == "") || name != dashboard && !strings.Contains(c.Notify, "getatt.HintsQueue.QueueName") {
				t.Errorf("CAIRN_BLOB %q / CAIRN_NOTIFY %q do not name this stack's bucket and queue", c.Blob, c.Notify)
			}

			// Time limits.
			hold := claimHold(t, c)
			if time.Duration(f.timeout)*time.Second < c.MaxRequestTime && role == config.API {
				t.Errorf("function timeout %ds is shorter than CAIRN_MAX_REQUEST_TIME %v", f.timeout, c.MaxRequestTime)
			}
			for evName, ev := range f.events {
				if ev.Type != "HttpApi" {
					continue
				}
				limit := 30 * time.Second // API Gateway HTTP APIs: 30 s, fixed
				if ms, ok := ev.Properties["TimeoutInMillis"].(float64); ok {
					limit = min(limit, time.Duration(ms)*time.Millisecond)
				}
				if c.MaxRequestTime > limit {
					t.Errorf("event %s: CAIRN_MAX_REQUEST_TIME %v exceeds the HTTP API's %v", evName, c.MaxRequestTime, limit)
				}
				if hold+500*time.Millisecond > limit {
					t.Errorf("event %s: a claim is held %v, too close to the HTTP API's %v", evName, hold, limit)
				}
				if v, _ := ev.Properties["PayloadFormatVersion"].(string); v != "2.0" {
					t.Errorf("event %s: payload format %q; httpadapter.NewV2 serves 2.0", evName, v)
				}
				t.Logf("HTTP API limit %v, CAIRN_MAX_REQUEST_TIME %v → claims held at most %v", limit, c.MaxRequestTime, hold)
			}

			// IAM: exactly what the code calls, on this stack's resources only.
			if f.fn.Role == nil {
				t.Fatal("no explicit Role: SAM's generated role attaches AWS managed policies with wildcard resources")
			}
			if f.fn.Policies != nil {
				t.Error("SAM Policies on a function with an explicit role")
			}
			g := grants(sam.roleStatements(t, *f.fn.Role))
			wantSQS := publish
			if name == dashboard {
				wantSQS = nil
			} else if config.Subscribes(role) {
				wantSQS = append(slices.Clone(publish), subscribe...)
				sort.Strings(wantSQS)
			}
			logGroup := "getatt." + strings.TrimSuffix(name, "Function") + "LogGroup.Arn"
			if _, err := sam.tmpl.GetLogsLogGroupWithName(strings.TrimSuffix(name, "Function") + "LogGroup"); err != nil {
				t.Errorf("no log group of its own: %v", err)
			}
			want := map[string][]string{
				"getatt.Bucket.Arn/*":   objects,
				"getatt.Bucket.Arn":     list,
				"getatt.HintsQueue.Arn": wantSQS,
				logGroup:                {"logs:CreateLogStream", "logs:PutLogEvents"},
			}
			for r, acts := range g {
				for _, a := range acts {
					if strings.Contains(a, "*") {
						t.Errorf("wildcard action %q on %s", a, r)
					}
				}
				if r == "*" || strings.Contains(strings.TrimSuffix(r, "/*"), "*") {
					t.Errorf("wildcard resource %q", r)
				}
				if !slices.Equal(acts, want[r]) {
					t.Errorf("%s: granted %v, the code needs %v", r, acts, want[r])
				}
			}
			for r, acts := range want {
				if _, ok := g[r]; !ok && len(acts) > 0 {
					t.Errorf("%s: nothing granted, the code needs %v", r, acts)
				}
			}
		})
	}

	// The reaper runs every minute.
	reaper := sam.function(t, "ReaperFunction")
	scheduled := false
	for _, ev := range reaper.events {
		if (ev.Type == "ScheduleV2" || ev.Type == "Schedule") && (ev.Properties["ScheduleExpression"] == "rate(1 minute)" || ev.Properties["Schedule"] == "rate(1 minute)") {
			scheduled = true
		}
	}
	if !scheduled {
		t.Errorf("the reaper has no rate(1 minute) schedule: %+v", reaper.events)
	}
	// The API is reachable: a Function URL.
	if api := sam.function(t, "ApiFunction"); api.fn.FunctionUrlConfig == nil {
		t.Error("the API has no Function URL")
	}
	// The dashboard's paths (package ui's, and / which redirects to it)
	// reach the dashboard function through the HTTP API; the API function
	// takes every other path.
	var routes []string
	for _, ev := range sam.function(t, dashboard).events {
		if ev.Type == "HttpApi" && ev.Properties["ApiId"] == "ref.HttpApi" {
			routes = append(routes, fmt.Sprint(ev.Properties["Method"], " ", ev.Properties["Path"]))
		}
	}
	slices.Sort(routes)
	if want := []string{"GET /", "GET /docs", "GET /docs/{proxy+}", "GET /favicon.ico", "GET /ui", "GET /ui/{proxy+}"}; !slices.Equal(routes, want) {
		t.Errorf("the dashboard function's HTTP API routes %v, want %v", routes, want)
	}

	// The bucket: no versioning, audit records expire, private, retained.
	buckets := sam.tmpl.GetAllS3BucketResources()
	if len(buckets) != 1 {
		t.Fatalf("%d buckets", len(buckets))
	}
	b := buckets["Bucket"]
	checkBucket(t, b)
	if qs := sam.tmpl.GetAllSQSQueueResources(); len(qs) != 1 {
		t.Errorf("%d queues", len(qs))
	} else {
		checkQueue(t, qs["HintsQueue"])
	}
}

// Lambda's default concurrency quota per region, and what it keeps
// unreserved whatever functions reserve.
const (
	lambdaQuota           = 1000
	lambdaMinUnreserved   = 100
	safeFleet             = 1000 // idle workers the defaults must carry on a default quota
	invocationOverhead    = 100 * time.Millisecond
	completeHeadroomShare = 0.5 // of the quota, left to everything but claims
)

// idleConcurrency is the Lambda environments W idle workers take on
// average when the server holds a claim hold and the SDKs wait 3/4 of
// pause between empty claims (their jittered backoff at its cap): each
// worker is in a request hold + overhead out of every hold + overhead +
// 3/4 pause.
func idleConcurrency(w int, hold, pause time.Duration) float64 {
	busy := hold + invocationOverhead
	return float64(w) * busy.Seconds() / (busy + pause*3/4).Seconds()
}

// TestSAMClaims: claims have a function of their own, reached through the
// HTTP API's claim route, whose reserved concurrency bounds the
// environments waiting workers take; the defaults carry 1,000 idle
// workers on a default 1,000 quota and leave starts and completes most of
// it; every value the parameters allow is one the binary accepts.
func TestSAMClaims(t *testing.T) {
	sam := loadSAM(t, map[string]any{"Keys": sampleKeys})
	params := sam.raw["Parameters"].(map[string]any)
	claims := sam.function(t, "ClaimsFunction")
	c, err := config.FromEnv(config.API, claims.environ())
	if err != nil {
		t.Fatal(err)
	}
	hold := claimHold(t, c)
	pause := c.ClaimPause

	// Reached by the claim route of the HTTP API, and nothing else; the
	// API function keeps every other path.
	ev, ok := claims.events["Claim"]
	if !ok || len(claims.events) != 1 || ev.Type != "HttpApi" || ev.Properties["Path"] != api.BasePath+"/steps/claim" || ev.Properties["Method"] != "POST" {
		t.Errorf("claims function events %+v: want one HttpApi event, POST %s/steps/claim", claims.events, api.BasePath)
	}
	if ev.Properties["ApiId"] != "ref.HttpApi" {
		t.Errorf("claim route on API %v, want the stack's HttpApi", ev.Properties["ApiId"])
	}
	if claims.fn.FunctionUrlConfig != nil {
		t.Error("the claims function has a Function URL: workers reach it through the HTTP API's route")
	}
	// The invocation outlives the hold: the engine answers 500 ms before
	// the invocation's deadline anyway, but a hold cut short by the
	// timeout is wasted.
	if time.Duration(claims.timeout)*time.Second < hold+time.Second {
		t.Errorf("claims function timeout %ds is shorter than the claim hold %v + 1 s", claims.timeout, hold)
	}

	// Both functions that may serve claims hold them briefly and ask for
	// a pause (workers on the Function URL claim on the API function).
	for _, name := range []string{"ApiFunction", "ClaimsFunction"} {
		f := sam.function(t, name)
		fc, err := config.FromEnv(config.API, f.environ())
		if err != nil {
			t.Fatal(err)
		}
		if h := claimHold(t, fc); h > 5*time.Second || fc.ClaimPause < 4*h {
			t.Errorf("%s: claims held %v with a %v pause: a waiting worker would hold an environment most of the time", name, h, fc.ClaimPause)
		}
	}

	// Reserved concurrency: the parameter, bounded, its default sized.
	if claims.fn.ReservedConcurrentExecutions == nil {
		t.Fatal("the claims function has no reserved concurrency")
	}
	reserved := *claims.fn.ReservedConcurrentExecutions
	p := params["ClaimsConcurrency"].(map[string]any)
	if p["Default"] != float64(reserved) || p["MinValue"] != float64(0) || p["MaxValue"] == nil {
		t.Errorf("ClaimsConcurrency %+v: want the reserved concurrency %d as default, bounds 0 to a maximum", p, reserved)
	}
	need := idleConcurrency(safeFleet, hold, pause)
	if float64(reserved) < need*1.25 {
		t.Errorf("reserved %d environments for claims; %d idle workers take %.0f at a %v hold and %v pause: want 25%% headroom", reserved, safeFleet, need, hold, pause)
	}
	if left := lambdaQuota - reserved; float64(left) < completeHeadroomShare*lambdaQuota || left < lambdaMinUnreserved {
		t.Errorf("reserving %d of a %d quota leaves %d for starts, completes and status reads", reserved, lambdaQuota, left)
	}
	t.Logf("claims: hold %v, pause %v; %d idle workers take %.0f environments (24 s holds: %d); %d reserved, %d of a default quota left",
		hold, pause, safeFleet, need, safeFleet, reserved, lambdaQuota-reserved)

	// 0 reserves nothing (for accounts whose quota is below 300).
	zero := loadSAM(t, map[string]any{"Keys": sampleKeys, "ClaimsConcurrency": "0"}).function(t, "ClaimsFunction")
	if zero.fn.ReservedConcurrentExecutions != nil {
		t.Errorf("ClaimsConcurrency=0 reserves %d", *zero.fn.ReservedConcurrentExecutions)
	}

	// Every hold and pause the parameters' patterns allow, and nothing
	// else nearby, is accepted by the binary under this stack's
	// CAIRN_MAX_REQUEST_TIME; the claims function's timeout covers the
	// longest.
	for _, pc := range []struct {
		param, env string
		upTo       int
	}{{"ClaimHold", config.EnvClaimHold, 30}, {"ClaimPause", config.EnvClaimPause, 90}} {
		pd := params[pc.param].(map[string]any)
		re := regexp.MustCompile(fmt.Sprint(pd["AllowedPattern"]))
		if !re.MatchString(fmt.Sprint(pd["Default"])) {
			t.Errorf("%s: default %v does not match its own pattern", pc.param, pd["Default"])
		}
		for n := 0; n <= pc.upTo; n++ {
			v := fmt.Sprintf("%ds", n)
			_, err := config.FromEnv(config.API, append(claims.environ(), pc.env+"="+v))
			if allowed := re.MatchString(v); allowed != (err == nil) {
				t.Errorf("%s=%s: the template allows it: %v; the binary accepts it: %v (%v)", pc.param, v, allowed, err == nil, err)
			}
			if pc.param == "ClaimHold" && re.MatchString(v) && time.Duration(n)*time.Second+time.Second > time.Duration(claims.timeout)*time.Second {
				t.Errorf("ClaimHold=%s: longer than the claims function's timeout %ds less 1 s", v, claims.timeout)
			}
		}
	}
}

func checkBucket(t *testing.T, b *s3.Bucket) {
	t.Helper()
	if b == nil {
		t.Fatal("no resource named Bucket")
	}
	if b.VersioningConfiguration != nil && b.VersioningConfiguration.Status == "Enabled" {
		t.Error("bucket versioning is on: every CAS write would keep a version")
	}
	if string(b.AWSCloudFormationDeletionPolicy) != "Retain" {
		t.Errorf("deletion policy %q: the bucket is the database, retain it", b.AWSCloudFormationDeletionPolicy)
	}
	pab := b.PublicAccessBlockConfiguration
	if pab == nil || pab.BlockPublicAcls == nil || !*pab.BlockPublicAcls || pab.RestrictPublicBuckets == nil || !*pab.RestrictPublicBuckets {
		t.Error("public access is not blocked")
	}
	audit := false
	if b.LifecycleConfiguration != nil {
		for _, r := range b.LifecycleConfiguration.Rules {
			if r.Prefix != nil && *r.Prefix == "audit/" && r.Status == "Enabled" && r.ExpirationInDays != nil && *r.ExpirationInDays > 0 {
				audit = true
			}
		}
	}
	if !audit {
		t.Error("no lifecycle rule expires audit/")
	}
}

func checkQueue(t *testing.T, q *sqs.Queue) {
	t.Helper()
	if q.MessageRetentionPeriod == nil || *q.MessageRetentionPeriod > 3600 {
		t.Errorf("hints kept %v s: an old hint is worthless, keep minutes", q.MessageRetentionPeriod)
	}
}

// ---- GCP ----

var gcpVars = map[string]string{
	"PROJECT": "my-project", "REGION": "europe-west1", "BUCKET": "my-project-cairn",
	"IMAGE": "europe-west1-docker.pkg.dev/my-project/cairn/cairn:v1", "REAPER_URL": "https://cairn-reaper-abc-ew.a.run.app",
}

// render fills in ${VAR}s as infra/gcp/deploy.sh does, and fails on one
// it does not know.
func render(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := regexp.MustCompile(`\$\{([A-Z_]+)\}`).ReplaceAllStringFunc(string(b), func(m string) string {
		v, ok := gcpVars[m[2:len(m)-1]]
		if !ok {
			t.Errorf("%s: unknown placeholder %s", path, m)
		}
		return v
	})
	return []byte(out)
}

func loadService(t *testing.T, path string) *runpb.Service {
	t.Helper()
	var s runpb.Service
	if err := (protojson.UnmarshalOptions{}).Unmarshal(render(t, path), &s); err != nil {
		t.Fatalf("%s is not a Cloud Run v2 Service: %v", path, err)
	}
	return &s
}

// serviceEnv is the container's environment as Cloud Run gives it.
func serviceEnv(t *testing.T, s *runpb.Service) ([]string, *runpb.Container) {
	t.Helper()
	if len(s.Template.Containers) != 1 {
		t.Fatalf("%d containers", len(s.Template.Containers))
	}
	c := s.Template.Containers[0]
	env := []string{"K_SERVICE=cairn", "PORT=" + fmt.Sprint(c.Ports[0].ContainerPort)}
	// The image's ENV (Containerfile) applies too.
	env = append(env, imageEnv(t)...)
	for _, e := range c.Env {
		switch v := e.Values.(type) {
		case *runpb.EnvVar_Value:
			env = append(env, e.Name+"="+v.Value)
		case *runpb.EnvVar_ValueSource:
			ref := v.ValueSource.GetSecretKeyRef()
			if ref == nil || ref.Secret == "" {
				t.Errorf("%s: value source without a secret", e.Name)
			}
			if e.Name != config.EnvKeys {
				t.Errorf("%s comes from secret %s: only CAIRN_KEYS is secret", e.Name, ref.GetSecret())
			}
			env = append(env, e.Name+"="+sampleKeys)
		}
	}
	return env, c
}

// imageEnv and imageBinaries read infra/image/Containerfile.
func imageEnv(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("image/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "ENV "); ok {
			env = append(env, strings.Fields(rest)...)
		}
	}
	return env
}

func imageBinaries(t *testing.T) []string {
	t.Helper()
	b, _ := os.ReadFile("image/Containerfile")
	m := regexp.MustCompile(`(?m)^COPY (cairn-[a-z]+(?: cairn-[a-z]+)*) /$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("Containerfile: no COPY of the binaries")
	}
	var out []string
	for _, f := range strings.Fields(m[1]) {
		out = append(out, "/"+f)
	}
	return out
}

func TestCloudRunServices(t *testing.T) {
	for file, role := range map[string]config.Role{"gcp/service-api.json": config.API, "gcp/service-reaper.json": config.ReaperHTTP} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s := loadService(t, file)
			env, ctr := serviceEnv(t, s)
			c, err := config.FromEnv(role, env)
			if err != nil {
				t.Fatalf("the %s binary would refuse this environment:\n%v", role, err)
			}
			if len(c.Warnings) > 0 {
				t.Errorf("warnings at start: %v", c.Warnings)
			}
			if c.Host != "0.0.0.0" {
				t.Errorf("binds %s: Cloud Run needs 0.0.0.0 (the image's ENV)", c.Host)
			}
			if c.Blob != "gs://"+gcpVars["BUCKET"] {
				t.Errorf("CAIRN_BLOB %q", c.Blob)
			}
			if len(ctr.Command) != 1 || !slices.Contains(imageBinaries(t), ctr.Command[0]) {
				t.Errorf("command %v: the image has %v", ctr.Command, imageBinaries(t))
			}
			if ctr.Image != gcpVars["IMAGE"] {
				t.Errorf("image %q", ctr.Image)
			}
			timeout := s.Template.Timeout.AsDuration()
			if timeout == 0 {
				t.Fatal("no request timeout")
			}
			if s.Template.MaxInstanceRequestConcurrency == 0 {
				t.Error("no concurrency set")
			}
			if !strings.HasPrefix(s.Template.ServiceAccount, "cairn-") {
				t.Errorf("service account %q: run as cairn's own account, not the default compute one", s.Template.ServiceAccount)
			}
			switch role {
			case config.API:
				if c.MaxRequestTime > timeout {
					t.Errorf("CAIRN_MAX_REQUEST_TIME %v exceeds the service timeout %v", c.MaxRequestTime, timeout)
				}
				hold := claimHold(t, c)
				if hold+500*time.Millisecond > timeout {
					t.Errorf("claims held %v, too close to the %v timeout", hold, timeout)
				}
				if s.Template.MaxInstanceRequestConcurrency < 80 {
					t.Errorf("concurrency %d: claims are idle long polls, let them share instances", s.Template.MaxInstanceRequestConcurrency)
				}
				t.Logf("timeout %v, concurrency %d, claims held at most %v", timeout, s.Template.MaxInstanceRequestConcurrency, hold)
			case config.ReaperHTTP:
				if !c.OIDC.Enabled() || !slices.Contains(s.CustomAudiences, c.OIDC.Audience) {
					t.Errorf("OIDC audience %q not among the service's custom audiences %v", c.OIDC.Audience, s.CustomAudiences)
				}
			}
		})
	}
}

func TestCloudSchedulerJob(t *testing.T) {
	var job schedulerpb.Job
	if err := protojson.Unmarshal(render(t, "gcp/scheduler-reaper.json"), &job); err != nil {
		t.Fatalf("not a Cloud Scheduler job: %v", err)
	}
	if job.Schedule != "* * * * *" {
		t.Errorf("schedule %q, want every minute", job.Schedule)
	}
	h := job.GetHttpTarget()
	if h == nil || h.HttpMethod != schedulerpb.HttpMethod_POST || !strings.HasPrefix(h.Uri, gcpVars["REAPER_URL"]+"/reap") {
		t.Fatalf("target %+v: want POST $REAPER_URL/reap", h)
	}
	oidc := h.GetOidcToken()
	if oidc == nil {
		t.Fatal("no OIDC token: the reaper would refuse the call")
	}
	reaper := loadService(t, "gcp/service-reaper.json")
	env, _ := serviceEnv(t, reaper)
	c, err := config.FromEnv(config.ReaperHTTP, env)
	if err != nil {
		t.Fatal(err)
	}
	if oidc.Audience != c.OIDC.Audience {
		t.Errorf("token audience %q, the reaper expects %q", oidc.Audience, c.OIDC.Audience)
	}
	if !slices.Contains(c.OIDC.Emails, oidc.ServiceAccountEmail) {
		t.Errorf("token for %q, the reaper accepts %v", oidc.ServiceAccountEmail, c.OIDC.Emails)
	}
	if d := job.AttemptDeadline.AsDuration(); d == 0 || d > reaper.Template.Timeout.AsDuration() {
		t.Errorf("attempt deadline %v vs the reaper's timeout %v", d, reaper.Template.Timeout.AsDuration())
	}
}

func TestGCPPermissions(t *testing.T) {
	want := gcsPermissions(t)
	var role struct {
		IncludedPermissions []string `yaml:"includedPermissions"`
	}
	b, err := os.ReadFile("gcp/role-bucket.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &role); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(role.IncludedPermissions)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("role-bucket.yaml grants %v; blob/gcs needs %v", got, want)
	}
	t.Logf("from blob/gcs: %v", want)

	// deploy.sh grants roles from one table, each on one resource, never on
	// the project; the table must be exactly what the code needs.
	sh, err := os.ReadFile("gcp/deploy.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(sh)
	if strings.Contains(script, "projects add-iam-policy-binding") || strings.Count(script, "add-iam-policy-binding") != 5 {
		t.Error("deploy.sh grants roles outside its BINDINGS table (or on the project)")
	}
	m := regexp.MustCompile(`(?s)BINDINGS=\((.*?)\n\)`).FindStringSubmatch(script)
	if m == nil {
		t.Fatal("deploy.sh: no BINDINGS table")
	}
	var bindings []string
	for _, line := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(m[1], -1) {
		f := strings.Fields(line[1])
		if len(f) != 4 {
			t.Fatalf("binding %q: want kind resource member role", line[1])
		}
		member := strings.TrimSuffix(strings.TrimPrefix(f[2], "serviceAccount:"), "@$PROJECT.iam.gserviceaccount.com")
		bindings = append(bindings, strings.Join([]string{f[0], f[1], member, f[3]}, " "))
	}
	sort.Strings(bindings)
	pub, sub := pubsubRoles(t)
	bucketRole := "projects/$PROJECT/roles/cairnBucketObjects"
	wantB := []string{
		"bucket gs://$BUCKET cairn-api " + bucketRole,
		"bucket gs://$BUCKET cairn-reaper " + bucketRole,
		"topic cairn-hints cairn-api " + pub,
		"topic cairn-hints cairn-reaper " + pub,
		"secret cairn-keys cairn-api roles/secretmanager.secretAccessor", // CAIRN_KEYS of the API only
		"run cairn-api allUsers roles/run.invoker",                       // keys authenticate the API
		"run cairn-reaper cairn-scheduler roles/run.invoker",             // the reaper is private
	}
	if config.Subscribes(config.API) {
		wantB = append(wantB, "subscription cairn-hints cairn-api "+sub)
	}
	if config.Subscribes(config.ReaperHTTP) {
		wantB = append(wantB, "subscription cairn-hints cairn-reaper "+sub)
	}
	sort.Strings(wantB)
	if !slices.Equal(bindings, wantB) {
		t.Errorf("deploy.sh BINDINGS:\n  %s\nwant:\n  %s", strings.Join(bindings, "\n  "), strings.Join(wantB, "\n  "))
	}

	// Each service's bus URL matches its side: the API receives from the
	// subscription, the reaper only publishes.
	for file, role := range map[string]config.Role{"gcp/service-api.json": config.API, "gcp/service-reaper.json": config.ReaperHTTP} {
		env, _ := serviceEnv(t, loadService(t, file))
		c, err := config.FromEnv(role, env)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.Notify, "gcppubsub://projects/"+gcpVars["PROJECT"]+"/topics/cairn-hints") {
			t.Errorf("%s: CAIRN_NOTIFY %q is not the cairn-hints topic", file, c.Notify)
		}
		if has := strings.Contains(c.Notify, "subscription="); has != config.Subscribes(role) {
			t.Errorf("%s: CAIRN_NOTIFY %q; this role subscribes: %v", file, c.Notify, config.Subscribes(role))
		}
	}

	// The lifecycle rule expires audit records.
	var lc struct {
		Rule []struct {
			Action    struct{ Type string }
			Condition struct {
				Age           int
				MatchesPrefix []string `json:"matchesPrefix"`
			}
		}
	}
	lb, _ := os.ReadFile("gcp/bucket-lifecycle.json")
	if err := json.Unmarshal(lb, &lc); err != nil {
		t.Fatal(err)
	}
	if len(lc.Rule) == 0 || lc.Rule[0].Action.Type != "Delete" || !slices.Contains(lc.Rule[0].Condition.MatchesPrefix, "audit/") || lc.Rule[0].Condition.Age <= 0 {
		t.Errorf("lifecycle %+v does not expire audit/", lc)
	}
}
