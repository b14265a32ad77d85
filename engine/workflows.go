package engine

import (
	"context"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/catalog"
	"github.com/cairn-dev/cairn/engine/internal/flow"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/engine/internal/trigger"
	"github.com/cairn-dev/cairn/engine/resultcache"
	"github.com/cairn-dev/cairn/notify"
)

// definition is a registered workflow with its compiled templates.
type definition struct {
	cairn.Workflow
	templates map[string]*render.Template // by step id
	whens     map[string]*render.Template // the when condition of each conditional step, by step id
	ancestors map[string][]string
	flow      *flow.Plan                    // concurrency, rate limits, priorities (limits.go)
	items     map[string]*render.Template   // the items expression of each map step
	nexts     map[string][]*render.Template // the if of each route of a looping step (loop.go)
	events    *trigger.Compiled             // its waits' and triggers' ifs (events.go)
	results   resultcache.Plan              // its steps' result caches (resultcache.go)
	sum       string                        // its content's (catalog.Sum)
}

func compile(w cairn.Workflow, field string) (*definition, error) {
	if err := w.Validate(field); err != nil {
		return nil, err
	}
	st, err := render.CompileSteps(w, field) // the steps' and on_failure steps' templates
	if err != nil {
		return nil, err
	}
	d := &definition{Workflow: w, sum: catalog.Sum(w), templates: st.Inputs, whens: st.Whens, ancestors: st.Ancestors, nexts: st.Nexts, items: st.Items}
	if err := render.CheckEncrypted(w, field); err != nil {
		return nil, err
	}
	if d.events, err = trigger.Compile(&w, field); err != nil {
		return nil, err
	}
	if d.results, err = resultcache.Compile(&w, field); err != nil {
		return nil, err
	}
	plan, err := flow.Compile(w, field)
	if err != nil {
		return nil, err
	}
	d.flow = plan
	return d, nil
}

// defCache is the engine's catalog of definitions (engine/internal/catalog).
type defCache = catalog.Catalog[*definition]

func (e *Engine) newCatalog() *defCache {
	return catalog.New(catalog.Host[*definition]{
		Store: e.store, Keys: e.keys, Now: e.now, Compile: compile, Registered: e.registered, LatestTTL: e.cfg.LatestTTL,
		ReadTimeout: e.cfg.CommitTimeout, Replace: e.cfg.ReplaceDefinitions, Log: e.log,
	})
}

// registerWorkflows stores definitions: new ones create-only, identical
// ones are a no-op, a known (name, version) with other content is a
// ConflictError.
func (e *Engine) registerWorkflows(ctx context.Context, wfs []cairn.Workflow) error {
	if err := e.defs.Register(ctx, wfs); err != nil {
		return err
	}
	return trigger.Index(ctx, e.store, e.keys, wfs)
}

// registered tells the other instances, through the bus, that a
// registration changed a workflow's latest record (this instance's
// catalog forgot its cached newest version already; a queue bus tells
// only one of them: there, LatestTTL bounds how long the previous version
// is started).
func (e *Engine) registered(name string) {
	if e.cfg.Bus != nil {
		go e.announce([]notify.Hint{notify.RegistrationNotice(name)})
	}
}

// definition returns a compiled definition, reading it once per instance.
func (e *Engine) definition(ctx context.Context, name, version string) (*definition, error) {
	return e.defs.Definition(ctx, name, version)
}

// latestVersion returns the newest registered version of a workflow
// (cached up to LatestTTL; a registration heard of forgets it).
func (e *Engine) latestVersion(ctx context.Context, name string) (string, error) {
	return e.defs.Latest(ctx, name)
}

// ListWorkflows lists registered workflows.
func (e *Engine) ListWorkflows(ctx context.Context) ([]cairn.WorkflowSummary, error) {
	return e.defs.List(ctx)
}

// GetWorkflow returns one registered definition: of version, or the
// newest when version is empty.
func (e *Engine) GetWorkflow(ctx context.Context, name, version string) (*cairn.Workflow, error) {
	if err := keys.WorkflowName.Check("name", name); err != nil {
		return nil, err
	}
	if version != "" {
		if err := keys.Version.Check("version", version); err != nil {
			return nil, err
		}
	} else {
		v, err := e.latestVersion(ctx, name)
		if err != nil {
			return nil, err
		}
		version = v
	}
	d, err := e.definition(ctx, name, version)
	if err != nil {
		return nil, err
	}
	w := d.Workflow
	return &w, nil
}
