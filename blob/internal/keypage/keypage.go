// Package keypage pages a listing whose keys a driver has in hand: the
// part of listing the file and mem drivers share. A page's token is the
// last key before the next page, so the next call lists the keys after it.
package keypage

import (
	"sort"

	"github.com/cairn-dev/cairn/blob"
)

// Page sorts keys (those under the prefix and after the page token) and
// returns the first pageSize of them as a page, with the next page's
// token when more remain. attrs reads a key's attributes; ok false leaves
// the key out (gone since it was listed), still counted in the page.
func Page(keys []string, pageSize int, attrs func(key string) (a blob.Attributes, ok bool, err error)) (blob.ListPage, error) {
	sort.Strings(keys)
	var page blob.ListPage
	for i, k := range keys {
		if i == pageSize {
			page.NextPageToken = keys[i-1]
			break
		}
		a, ok, err := attrs(k)
		if err != nil {
			return blob.ListPage{}, err
		}
		if ok {
			page.Objects = append(page.Objects, a)
		}
	}
	return page, nil
}
