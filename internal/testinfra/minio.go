package testinfra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// DefaultMinIOImage is used when CAIRN_MINIO_IMAGE is unset: on a machine
// with Docker and a registry, testcontainers pulls it.
const DefaultMinIOImage = "minio/minio:latest"

const (
	minioUser     = "minioadmin"
	minioPassword = "minioadmin"
	minioPort     = "9000/tcp"

	// Containers carry these labels so that a later run can remove those left
	// behind by a test binary that died without running Main's cleanup
	// (e.g. a -timeout panic).
	labelService = "dev.cairn.testinfra"
	labelPID     = "dev.cairn.testinfra.pid"
	labelHost    = "dev.cairn.testinfra.host"
)

// MinIOEndpoint is a running MinIO, shared by all tests of one test binary:
// give each test its own bucket (NewBucketName).
type MinIOEndpoint struct {
	Endpoint  string // "http://127.0.0.1:PORT"
	AccessKey string
	SecretKey string
	Region    string // "us-east-1"
}

var minioOnce shared[*MinIOEndpoint]

// MinIO returns the test binary's MinIO, starting its container on first use.
// It skips the test under -short and fails it if no engine is reachable.
func MinIO(t testing.TB) *MinIOEndpoint {
	t.Helper()
	require(t, "MinIO")
	minioOnce.start(t, "MinIO", "\n"+setupHint, startMinIO)
	return minioOnce.v
}

// MinIOKMSKey is the name of the key the server-side encrypting MinIO
// (MinIOSSE) holds: SSE-KMS writes name it as their key id.
const MinIOKMSKey = "cairn-test-key"

// minioKMSSecret is that key: MINIO_KMS_SECRET_KEY, NAME:base64 of 32
// bytes. A fixed test key; the data it guards is thrown away.
const minioKMSSecret = MinIOKMSKey + ":MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

var minioSSEOnce shared[*MinIOEndpoint]

// MinIOSSE returns a second MinIO of the test binary, started on first
// use, that can encrypt what it stores: it holds the key MinIOKMSKey
// (MINIO_KMS_SECRET_KEY), so writes asking for SSE-S3 (AES256) or for
// SSE-KMS with that key are stored encrypted, as is everything written to
// a bucket with a default encryption. The shared MinIO (MinIO) has no
// key and refuses such writes.
func MinIOSSE(t testing.TB) *MinIOEndpoint {
	t.Helper()
	require(t, "MinIO")
	minioSSEOnce.start(t, "MinIO with server-side encryption", "\n"+setupHint, func() (*MinIOEndpoint, error) {
		return startMinIOWith(map[string]string{"MINIO_KMS_SECRET_KEY": minioKMSSecret})
	})
	return minioSSEOnce.v
}

func startMinIO() (*MinIOEndpoint, error) { return startMinIOWith(nil) }

// startMinIOWith starts a MinIO container with env added to its
// environment.
func startMinIOWith(env map[string]string) (*MinIOEndpoint, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	if err := engineHealthy(ctx); err != nil {
		return nil, fmt.Errorf("no container engine reachable (DOCKER_HOST=%q): %w", os.Getenv("DOCKER_HOST"), err)
	}
	removeStale(ctx)

	image := os.Getenv("CAIRN_MINIO_IMAGE")
	if image == "" {
		image = DefaultMinIOImage
	}
	req := minioRequest(image)
	maps.Copy(req.Env, env)
	ctr, err := startMinIOContainer(ctx, req)
	if ctr != nil {
		onStop(func() {
			if err := testcontainers.TerminateContainer(ctr); err != nil {
				fmt.Fprintf(os.Stderr, "testinfra: stopping MinIO: %v\n", err)
			}
		})
	}
	if err != nil {
		return nil, fmt.Errorf("starting container from image %q: %w", image, err)
	}
	port, err := ctr.MappedPort(ctx, minioPort)
	if err != nil {
		return nil, err
	}
	return &MinIOEndpoint{
		Endpoint:  "http://127.0.0.1:" + port.Port(),
		AccessKey: minioUser,
		SecretKey: minioPassword,
		Region:    "us-east-1",
	}, nil
}

// minioRequest is the container request of a MinIO server from image:
// its credentials, the labels removeStale finds it by, its port published
// on loopback, and waiting until it is ready.
func minioRequest(image string) testcontainers.GenericContainerRequest {
	host, _ := os.Hostname()
	return testcontainers.GenericContainerRequest{
		Started: true,
		ContainerRequest: testcontainers.ContainerRequest{
			Image: image,
			Cmd:   []string{"server", "/data"},
			Env: map[string]string{
				"MINIO_ROOT_USER":     minioUser,
				"MINIO_ROOT_PASSWORD": minioPassword,
				"MINIO_BROWSER":       "off",
				"MINIO_UPDATE":        "off",
			},
			Labels: map[string]string{
				labelService: "minio",
				labelPID:     strconv.Itoa(os.Getpid()),
				labelHost:    host,
			},
			ExposedPorts: []string{minioPort},
			// Publish on loopback only (the default would be 0.0.0.0).
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{
					network.MustParsePort(minioPort): {{HostIP: netip.MustParseAddr("127.0.0.1")}},
				}
			},
			// "ready", not "live": live answers before MinIO has
			// initialised its drives and accepts requests.
			WaitingFor: wait.ForHTTP("/minio/health/ready").WithPort(minioPort).
				WithStartupTimeout(90 * time.Second),
		},
	}
}

// startMinIOContainer starts the MinIO container of req, retrying failed
// starts.
//
// A container engine under load sometimes fails a start outright
// ("write child: broken pipe" from the OCI runtime while several test
// binaries start containers at once): the failed container is removed
// and the start tried again, three times in all.
func startMinIOContainer(ctx context.Context, req testcontainers.GenericContainerRequest) (ctr testcontainers.Container, err error) {
	for try := 1; ; try++ {
		ctr, err = testcontainers.GenericContainer(ctx, req)
		if err == nil || try == 3 || ctx.Err() != nil {
			break
		}
		fmt.Fprintf(os.Stderr, "testinfra: MinIO start %d failed, retrying: %v\n", try, err)
		if ctr != nil {
			_ = testcontainers.TerminateContainer(ctr)
		}
		time.Sleep(time.Duration(try) * time.Second)
	}
	return ctr, err
}

// engineHealthy pings the engine testcontainers would use.
func engineHealthy(ctx context.Context) (err error) {
	defer func() { // older code paths panic when no Docker host is found
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return p.Health(hctx) // closes p
}

// removeStale removes MinIO containers that this package started on this host
// from test binaries that are no longer running. Best effort.
func removeStale(ctx context.Context) {
	host, _ := os.Hostname()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: client.Filters{}.Add("label", labelService+"=minio", labelHost+"="+host),
	})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		pid, err := strconv.Atoi(c.Labels[labelPID])
		if err != nil || processAlive(pid) {
			continue
		}
		_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
}

// Client returns an S3 client for this MinIO (static credentials,
// path-style addressing; nothing is read from ~/.aws or the environment).
func (e *MinIOEndpoint) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       e.Region,
		BaseEndpoint: aws.String(e.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(e.AccessKey, e.SecretKey, ""),
	})
}

// CreateBucket creates bucket name, failing t on error.
func (e *MinIOEndpoint) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// A loaded machine (the whole suite at once) can make MinIO answer 503
	// "server not initialized" or time out for a while: retry until the
	// deadline, then fail with the last error.
	for wait := 100 * time.Millisecond; ; wait = min(wait*2, 2*time.Second) {
		_, err := e.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
		if err == nil || strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
			return // created, perhaps by an attempt whose answer was lost
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testinfra: create bucket %q: %v", name, err)
		case <-time.After(wait):
		}
	}
}

var nonBucketChars = regexp.MustCompile(`[^a-z0-9]+`)

// NewBucketName returns a unique, valid S3 bucket name derived from the
// test's name, e.g. "t-testputget-3f9a0c1b2d4e".
func NewBucketName(t testing.TB) string {
	t.Helper()
	stem := strings.Trim(nonBucketChars.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(stem) > 40 {
		stem = strings.TrimRight(stem[:40], "-")
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	if stem == "" {
		return "t-" + hex.EncodeToString(b[:])
	}
	return "t-" + stem + "-" + hex.EncodeToString(b[:])
}
