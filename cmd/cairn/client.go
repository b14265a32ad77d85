package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/sdk"
)

// clientFlags are the global flags of the commands that talk to a server.
type clientFlags struct {
	server string
	key    string
	keys   string    // --keys: a keyring file (sdk/codec) to decrypt values with
	pl     *payloads // read from keys by client
}

// addClientFlags adds the global --server and --key flags to root.
func addClientFlags(root *cobra.Command) *clientFlags {
	cf := &clientFlags{}
	server := os.Getenv("CAIRN_SERVER")
	if server == "" {
		server = sdk.DefaultServer
	}
	root.PersistentFlags().StringVar(&cf.server, "server", server, "cairn API address: a URL, or host:port for http://host:port (env CAIRN_SERVER)")
	root.PersistentFlags().StringVar(&cf.key, "key", os.Getenv("CAIRN_KEY"), "API key, sent as Authorization: Bearer <key> (env CAIRN_KEY)")
	// Not $CAIRN_KEYS: that is the server's API keys (docs/DEPLOY.md).
	root.PersistentFlags().StringVar(&cf.keys, "keys", os.Getenv("CAIRN_KEYRING"), "keyring file of the values clients encrypt (docs/SECURITY.md): they print decrypted; without it, as <encrypted KID> (env CAIRN_KEYRING; read here, never sent)")
	return cf
}

// client returns a client of the server the flags name.
func (cf *clientFlags) client() (*sdk.Client, error) {
	pl, err := loadPayloads(cf.keys)
	if err != nil {
		return nil, err
	}
	cf.pl = pl
	var opts []sdk.ClientOption
	if cf.key != "" {
		opts = append(opts, sdk.WithAPIKey(cf.key))
	}
	u := serverURL(cf.server)
	if err := checkServer(u); err != nil {
		given := "--server"
		if env := os.Getenv("CAIRN_SERVER"); env != "" && env == cf.server {
			given = "$CAIRN_SERVER"
		}
		return nil, fmt.Errorf("%s %q is not a server address (%v): type a URL or host:port, such as --server http://127.0.0.1:8080 or --server 127.0.0.1:8080", given, cf.server, err)
	}
	return sdk.NewClient(u, opts...)
}

// checkServer says what is wrong with a server URL, if anything.
func checkServer(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("the scheme %s is not http or https", u.Scheme)
	case u.Hostname() == "":
		return errors.New("no host")
	}
	return nil
}

// serverURL is the API address given to --server or $CAIRN_SERVER as a
// URL: host:port (127.0.0.1:8080, localhost:8080) means http://host:port;
// an address with a scheme is taken as it is.
func serverURL(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.Contains(s, "://") {
		return s
	}
	return "http://" + s
}

// run returns a command's RunE: it makes the client of the server the
// flags name, then calls f with it.
func (cf *clientFlags) run(f func(cmd *cobra.Command, args []string, c *sdk.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := cf.client()
		if err != nil {
			return err
		}
		return f(cmd, args, c)
	}
}

// runOutput is run for a command with -o/--output (of): it checks the
// format first, then calls f with the client and the format.
func (cf *clientFlags) runOutput(of *outputFlag, f func(cmd *cobra.Command, args []string, c *sdk.Client, format string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		format, err := of.get()
		if err != nil {
			return err
		}
		c, err := cf.client()
		if err != nil {
			return err
		}
		return f(cmd, args, c, format)
	}
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// prettyJSON indents raw JSON for people; invalid JSON is returned as is.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// readJSONArg reads a JSON value given inline, as @file, or as - (stdin).
func readJSONArg(cmd *cobra.Command, flag, v string) (json.RawMessage, error) {
	var b []byte
	switch {
	case v == "-":
		var err error
		if b, err = io.ReadAll(cmd.InOrStdin()); err != nil {
			return nil, err
		}
	case strings.HasPrefix(v, "@"):
		var err error
		if b, err = os.ReadFile(v[1:]); err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
	default:
		b = []byte(v)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("--%s is not valid JSON: %s (quote strings: --%s '\"text\"')", flag, abbrev(string(b), 60), flag)
	}
	return json.RawMessage(b), nil
}

// optionalJSONArg is readJSONArg for a flag that may be left out: nil
// (no value at all) when v is empty.
func optionalJSONArg(cmd *cobra.Command, flag, v string) (any, error) {
	if v == "" {
		return nil, nil
	}
	raw, err := readJSONArg(cmd, flag, v)
	if err != nil {
		return nil, err
	}
	return raw, nil
}

func abbrev(s string, n int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// ago formats a time as a short age.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return shortDuration(time.Since(t)) + " ago"
}

func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}

// isTerminal reports whether w is a terminal (not /dev/null, a pipe or a
// file: a character device is not enough). A variable so that tests can
// take the terminal's code paths.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colorOK reports whether w may get ANSI colours: a terminal, NO_COLOR
// unset or empty (https://no-color.org) and TERM not "dumb".
func colorOK(w io.Writer, getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb" && isTerminal(w)
}

// paintStatus colours a run status for a terminal: green completed, red
// failed or timed out, yellow cancelled or paused.
func paintStatus(s string, color bool) string {
	if !color {
		return s
	}
	code := ""
	switch s {
	case "completed":
		code = "32"
	case "failed", "timed_out":
		code = "31"
	case "cancelled", "paused":
		code = "33"
	default:
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}
