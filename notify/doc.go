// Package notify opens the notification buses that carry work hints
// between cairn engine instances, behind one small portable API in the
// style of gocloud.dev: a URL picks the driver.
//
//	bus, err := notify.Open(ctx, "nats://127.0.0.1:4222?subject=cairn.hints")
//	...
//	eng, err := engine.New(store, engine.Config{Bus: bus})
//	...
//	defer notify.Close(bus) // after eng.Close()
//
// Drivers register their URL scheme when their package is imported; import
// github.com/cairn-dev/cairn/notify/all for every driver:
//
//	mem://NAME                          in-process fan-out (notify/mem)
//	nats://HOST:PORT?subject=S          core NATS fan-out (notify/nats)
//	awssqs://QUEUE-URL-WITHOUT-SCHEME   AWS SQS queue (notify/sqs)
//	gcppubsub://projects/P/topics/T?subscription=S
//	                                    Google Pub/Sub (notify/gcppubsub)
//	faults://?url=INNER&drop=0.5        fault injection for tests (notify/faults;
//	                                    the former scheme faulty:// still works)
//
// # Hints are hints; the bucket decides
//
// A notification ([Hint]) says that an attempt may be claimable. It
// is never a fact: the bucket is the only state, and every claim is decided
// there by a conditional write. So a bus is allowed to duplicate, reorder,
// delay or lose notifications, and none of that can lose or duplicate
// work:
//
//   - a duplicated hint wakes a claim that finds the attempt already
//     leased (the create-only lease write fails) and waits again;
//   - a stale or reordered hint (an older attempt, a NotBefore already past)
//     is checked against the bucket like any other;
//   - a lost hint costs latency only: a waiting claim still scans the bucket
//     at the engine's fallback interval, and the reaper re-announces ready
//     work that stayed unclaimed (Config.AnnounceAfter). That bound is what
//     an engine test with every notification dropped (notify/faults) checks.
//
// A failed Publish is reported to the engine, which serves its own claims
// from the hints it could not send and logs a warning; nothing is retried
// beyond what the driver's client does within the call's context.
//
// # Run-change notices
//
// A hint with Changed set is a run-change notice: the run's record was
// written at revision Rev. Instances use it to wake the status requests
// waiting on that run; it names no step, workflow or version and is never
// claimable work. It travels in the same batches and is as lossy as any
// hint (a lost one costs a waiting request its fallback read). On a queue
// bus it reaches one instance.
//
// # Progress notices
//
// A hint with Progress set carries a step body's progress value to the
// watchers of its run on other instances (its top-level fields are empty;
// it is not work). It is as lossy as any hint, and never stored: a lost
// one is a value a watcher does not see. The instance that accepted it
// has delivered it to its own watchers and ignores its copy. On a queue
// bus it reaches one instance, so watchers elsewhere may miss it.
//
// # Fan-out and queue semantics
//
// The engine subscribes once per instance and hands each received hint to
// one waiting claim of that instance (its hub). What differs between
// drivers is which instances receive a hint:
//
//   - Fan-out (mem, NATS): every subscriber receives every hint, so every
//     instance's waiting claims get the chance to take the work; the bucket
//     picks the single winner.
//   - Queue (SQS, Pub/Sub with one shared subscription): each message
//     reaches ONE subscriber. The hints it carries are consumed by that one
//     instance: its hub serves them to a matching waiting claim. If that
//     instance has no matching claim (a claim scoped to another run, or no
//     claim at all), the hint sits in its hub until it ages out, and the
//     work is found by the other instances' fallback scan and by the
//     reaper's re-announcement, within the fallback bound. Queue buses are
//     what serverless fronts use (no long-lived connection per instance);
//     pick a shorter FallbackInterval there if latency matters more than
//     storage reads.
//
// # Messages
//
// A Publish call sends its hints as one compact JSON batch message
// ({"v":1,"hints":[...]}, each hint with [Hint]'s JSON fields), not
// one message per hint; a batch larger than the driver's message limit is
// split into several messages, each below the limit ([DefaultMaxMessageBytes],
// under SQS's 256 KiB; NATS also stays below the server's max_payload). A
// message that cannot be decoded is logged and dropped (acknowledged on
// queues, so a poison message is not redelivered forever).
//
// # Subscribe and stop
//
// Subscribe delivers every received hint to fn, from the driver's own
// goroutines, until the returned stop is called. stop is idempotent, waits
// for a delivery in progress, and fn is never called after it returns (fn
// must not call stop itself). Queue drivers acknowledge a message after fn
// has been handed all its hints.
//
// Buses that hold connections implement io.Closer; [Close] closes any bus
// once the engines using it are closed.
package notify
