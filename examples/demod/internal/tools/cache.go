package tools

import "container/list"

// entry is one cached search result and whatever it pins.
type entry struct {
	result []byte
	total  int // matches, of which result holds up to the limit
	rows   []byte
}

func (e entry) size() int64 { return int64(cap(e.result) + cap(e.rows)) }

// cache is an LRU keyed by query; capacity 0 means unbounded (bug #581).
type cache struct {
	capacity int
	order    *list.List // front = most recent; values are *item
	items    map[string]*list.Element
	bytes    int64
}

type item struct {
	key string
	e   entry
}

func newCache(capacity int) *cache {
	return &cache{capacity: capacity, order: list.New(), items: map[string]*list.Element{}}
}

func (c *cache) len() int { return len(c.items) }

// get takes the key as bytes: indexing with string(key) does not allocate.
func (c *cache) get(key []byte) (entry, bool) {
	el, ok := c.items[string(key)]
	if !ok {
		return entry{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*item).e, true
}

func (c *cache) put(key string, e entry) {
	if el, ok := c.items[key]; ok {
		it := el.Value.(*item)
		c.bytes += e.size() - it.e.size()
		it.e = e
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&item{key: key, e: e})
	c.bytes += e.size()
	for c.capacity > 0 && len(c.items) > c.capacity {
		old := c.order.Back()
		it := old.Value.(*item)
		c.order.Remove(old)
		delete(c.items, it.key)
		c.bytes -= it.e.size()
	}
}
