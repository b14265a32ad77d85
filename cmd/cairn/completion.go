package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

// completionTimeout bounds the server calls of a shell completion: a
// server that is slow or down gives no completion, not a stuck prompt.
var completionTimeout = 2 * time.Second

// completeArgs gives every command of the tree a completion of its
// arguments, by the placeholders of its Use line: <workflow> (and
// workflows [name]) offers the registered workflows, <run> the newest
// runs, <schedule> the schedules, all read from the server named by
// --server and --key; any other argument offers nothing. Never files: no
// command takes a file argument (--input @file is a flag's value). A
// --workflow flag offers the workflows too.
func completeArgs(c *cobra.Command, cf *clientFlags) {
	for _, sub := range c.Commands() {
		completeArgs(sub, cf)
	}
	if c.LocalFlags().Lookup("workflow") != nil {
		c.RegisterFlagCompletionFunc("workflow", func(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return serverCompletions(cmd.Context(), cf, prefix, workflowNames), cobra.ShellCompDirectiveNoFileComp
		})
	}
	if c.ValidArgsFunction != nil || len(c.ValidArgs) > 0 {
		return
	}
	placeholders := strings.Fields(c.Use)[1:]
	c.ValidArgsFunction = func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= len(placeholders) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var list func(context.Context, *sdk.Client) ([]string, error)
		switch strings.Trim(placeholders[len(args)], "<>[]") {
		case "workflow":
			list = workflowNames
		case "name":
			if c.Name() == "workflows" {
				list = workflowNames
			}
		case "run":
			list = runIDs
		case "schedule":
			list = scheduleIDs
		}
		if list == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return serverCompletions(cmd.Context(), cf, prefix, list), cobra.ShellCompDirectiveNoFileComp
	}
}

// serverCompletions is what list reads from the server that start with
// prefix, or nothing when the server does not answer within
// completionTimeout.
func serverCompletions(ctx context.Context, cf *clientFlags, prefix string, list func(context.Context, *sdk.Client) ([]string, error)) []cobra.Completion {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	c, err := cf.client()
	if err != nil {
		return nil
	}
	names, err := list(ctx, c)
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func workflowNames(ctx context.Context, c *sdk.Client) ([]string, error) {
	ws, err := c.Workflows(ctx)
	return names(ws, func(w sdk.WorkflowSummary) string { return w.Name }), err
}

// runIDs are the newest runs' ids (one page): an id is typed from its
// start, and the runs a user means are mostly the recent ones.
func runIDs(ctx context.Context, c *sdk.Client) ([]string, error) {
	p, err := c.List(ctx, sdk.ListOptions{Limit: 100})
	if err != nil {
		return nil, err
	}
	return names(p.Runs, func(r sdk.RunSummary) string { return r.ID }), nil
}

func scheduleIDs(ctx context.Context, c *sdk.Client) ([]string, error) {
	p, err := c.ListSchedules(ctx, 100, "")
	if err != nil {
		return nil, err
	}
	return names(p.Schedules, func(s sdk.Schedule) string { return s.ID }), nil
}

// names is the name of each of xs, in order.
func names[T any](xs []T, name func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, name(x))
	}
	return out
}
