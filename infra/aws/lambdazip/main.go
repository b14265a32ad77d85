// Command lambdazip packs a Lambda custom-runtime binary as the zip file
// Lambda's provided.al2023 runtime wants: one executable named bootstrap
// at the root. The zip is reproducible (fixed time, fixed mode 0755), so
// the same binary gives the same zip and CloudFormation sees no change.
//
//	go run ./infra/aws/lambdazip -o dist/cairn-api-arm64.zip path/to/binary
package main

import (
	"archive/zip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

func main() {
	out := flag.String("o", "", "zip file to write")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: lambdazip -o OUT.zip BINARY")
		os.Exit(2)
	}
	if err := pack(*out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "lambdazip:", err)
		os.Exit(1)
	}
}

func pack(out, bin string) error {
	in, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, Modified: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
