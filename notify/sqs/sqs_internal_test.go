package sqs

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestGroupBatches(t *testing.T) {
	msg := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	sizes := func(bs [][][]byte) [][]int {
		var out [][]int
		for _, b := range bs {
			var s []int
			for _, m := range b {
				s = append(s, len(m))
			}
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []int
		want string
	}{
		{"none", nil, "[]"},
		{"one", []int{5}, "[[5]]"},
		{"entries", []int{1, 1, 1, 1, 1}, "[[1 1] [1 1] [1]]"},
		{"bytes", []int{4, 4, 4, 2, 9}, "[[4 4] [4 2] [9]]"},
		{"oversized alone", []int{1, 20, 1}, "[[1] [20] [1]]"},
	} {
		var in [][]byte
		for _, n := range tc.in {
			in = append(in, msg(n))
		}
		got := sizes(groupBatches(in, 2, 10))
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, s, tc.want)
		}
	}
	// SQS's own limits: 10 entries, the byte cap.
	var in [][]byte
	for range 25 {
		in = append(in, msg(100))
	}
	for i, b := range groupBatches(in, maxBatchEntries, 1000) {
		if len(b) > maxBatchEntries {
			t.Errorf("batch %d has %d entries", i, len(b))
		}
	}
}

func TestBody(t *testing.T) {
	const hints = `{"v":1,"hints":[]}`
	sns := func(arn, msg string, attrs string) string {
		return `{"Type":"Notification","MessageId":"m","TopicArn":"` + arn + `","Timestamp":"2030-01-01T00:00:00Z","Message":` +
			strings.ReplaceAll(`"`+strings.ReplaceAll(msg, `"`, `\"`)+`"`, "\n", "") + `,"MessageAttributes":{` + attrs + `}}`
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(hints))
	flag := map[string]types.MessageAttributeValue{base64EncodedKey: {DataType: aws.String("String"), StringValue: aws.String("true")}}
	for _, tc := range []struct {
		name  string
		opts  Options
		body  string
		attrs map[string]types.MessageAttributeValue
		want  string
	}{
		{"raw body", Options{}, hints, nil, hints},
		{"sns unwrapped", Options{}, sns("arn:t", hints, ""), nil, hints},
		{"sns from the topic", Options{SNSTopicARN: "arn:t"}, sns("arn:t", hints, ""), nil, hints},
		{"sns from another topic", Options{SNSTopicARN: "arn:u"}, sns("arn:t", hints, ""), nil, sns("arn:t", hints, "")},
		{"raw option", Options{Raw: true}, sns("arn:t", hints, ""), nil, sns("arn:t", hints, "")},
		{"attributes mean raw", Options{}, sns("arn:t", hints, ""), map[string]types.MessageAttributeValue{"k": {StringValue: aws.String("v")}}, sns("arn:t", hints, "")},
		{"base64 attribute", Options{}, b64, flag, hints},
		{"base64 in sns", Options{}, sns("arn:t", b64, `"base64encoded":{"Type":"String","Value":"true"}`), nil, hints},
		{"bad base64 kept", Options{}, "%%%", flag, "%%%"},
	} {
		b := &Bus{opts: tc.opts}
		got := string(b.body(types.Message{Body: aws.String(tc.body), MessageAttributes: tc.attrs}))
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

type recordClient struct{ body io.ReadCloser }

func (c *recordClient) Do(r *http.Request) (*http.Response, error) {
	c.body = r.Body
	return nil, io.EOF
}

// writerToBody is a request body with WriteTo, like the SDK's.
type writerToBody struct{ io.Reader }

func (writerToBody) Close() error                         { return nil }
func (w writerToBody) WriteTo(d io.Writer) (int64, error) { return io.Copy(d, w.Reader) }

func TestWithSafeBody(t *testing.T) {
	rc := &recordClient{}
	opts := &sqs.Options{HTTPClient: rc}
	withSafeBody(opts)
	withSafeBody(opts) // wraps once
	if c, ok := opts.HTTPClient.(safeBodyClient); !ok || c.HTTPClient != rc {
		t.Fatalf("HTTPClient %T not wrapped once", opts.HTTPClient)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
	req.Body = writerToBody{strings.NewReader("a=b")}
	opts.HTTPClient.Do(req)
	if _, ok := rc.body.(io.WriterTo); ok {
		t.Errorf("body %T still has WriteTo", rc.body)
	}
	if got, _ := io.ReadAll(rc.body); string(got) != "a=b" {
		t.Errorf("body reads %q", got)
	}
	req.Body = http.NoBody
	opts.HTTPClient.Do(req)
	if rc.body != http.NoBody {
		t.Errorf("http.NoBody became %T", rc.body)
	}
}
