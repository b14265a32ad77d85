package testinfra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azurite's well-known development account.
const (
	AzuriteAccountName = "devstoreaccount1"
	AzuriteAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// AzuriteEndpoint is a running Azurite blob service, shared by all tests of
// one test binary: give each test its own container name.
type AzuriteEndpoint struct {
	BlobEndpoint string // "http://127.0.0.1:PORT/devstoreaccount1"
	AccountName  string
	AccountKey   string
}

// ConnectionString returns an Azure Storage connection string for e.
func (e *AzuriteEndpoint) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + e.AccountName +
		";AccountKey=" + e.AccountKey + ";BlobEndpoint=" + e.BlobEndpoint + ";"
}

// ContainerClient returns a client of the container name on e,
// authenticated with e's shared key.
func (e *AzuriteEndpoint) ContainerClient(t testing.TB, name string) *container.Client {
	t.Helper()
	cred, err := container.NewSharedKeyCredential(e.AccountName, e.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(e.BlobEndpoint+"/"+name, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var azuriteOnce struct {
	shared[*AzuriteEndpoint]

	mu   sync.Mutex // guards v (RestartAzurite replaces it) and stop after the first start
	stop func()     // stops the running Azurite
	out  *bytes.Buffer
}

// Azurite returns the test binary's Azurite blob service, starting it on first
// use. It skips the test under -short and fails it if Azurite is not installed.
func Azurite(t testing.TB) *AzuriteEndpoint {
	t.Helper()
	require(t, "Azurite")
	azuriteOnce.start(t, "Azurite", "\n"+setupHint, startAzurite)
	azuriteOnce.mu.Lock()
	defer azuriteOnce.mu.Unlock()
	return azuriteOnce.v
}

// RestartAzurite replaces the binary's Azurite when it stopped answering
// at ep (CI saw the one Node process of an engine suite hang late in the
// suite: no answer to a container create for 90 s), and returns the new
// one; when another test already replaced ep, the current one. Buckets
// on the old one are gone: only a test that cannot reach it calls this.
func RestartAzurite(t testing.TB, ep *AzuriteEndpoint) *AzuriteEndpoint {
	t.Helper()
	azuriteOnce.mu.Lock()
	defer azuriteOnce.mu.Unlock()
	if azuriteOnce.v != ep {
		return azuriteOnce.v
	}
	if azuriteOnce.stop != nil {
		azuriteOnce.stop() // waits for the process: its output is complete
	}
	if azuriteOnce.out != nil {
		t.Logf("testinfra: restarted Azurite at %s; its output: %s", ep.BlobEndpoint, tail(azuriteOnce.out.String(), 2000))
	}
	next, err := startAzurite()
	if err != nil {
		t.Fatalf("testinfra: restarting Azurite: %v", err)
	}
	azuriteOnce.v = next
	return next
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func startAzurite() (*AzuriteEndpoint, error) {
	bin := os.Getenv("CAIRN_AZURITE_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("azurite-blob"); err != nil {
			return nil, errors.New("CAIRN_AZURITE_BIN is unset and azurite-blob is not on PATH")
		}
	}
	// The free port is found then released, so another process may grab it
	// first: retry a few times.
	var err error
	for range 3 {
		var ep *AzuriteEndpoint
		if ep, err = runAzurite(bin); err == nil {
			return ep, nil
		}
	}
	return nil, err
}

func runAzurite(bin string) (*AzuriteEndpoint, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cairn-azurite-")
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer // startup messages, for error reports
	cmd := exec.Command(bin,
		"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port),
		"--inMemoryPersistence", "--skipApiVersionCheck", "--loose", "--silent")
	cmd.Dir = dir // in case it writes anything (debug logs)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		killChild(cmd)
		<-exited
		os.RemoveAll(dir)
	}

	ep := &AzuriteEndpoint{
		BlobEndpoint: fmt.Sprintf("http://127.0.0.1:%d/%s", port, AzuriteAccountName),
		AccountName:  AzuriteAccountName,
		AccountKey:   AzuriteAccountKey,
	}
	// Any HTTP answer (an unauthenticated request gets 403) means it is up.
	deadline := time.After(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ep.BlobEndpoint+"?comp=list", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			var once sync.Once
			stopOnce := func() { once.Do(stop) }
			onStop(stopOnce)
			azuriteOnce.stop, azuriteOnce.out = stopOnce, &out
			return ep, nil
		}
		select {
		case <-exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%s exited: %s", bin, out.String())
		case <-deadline:
			stop()
			return nil, fmt.Errorf("%s did not answer on 127.0.0.1:%d within 30s: %s", bin, port, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
