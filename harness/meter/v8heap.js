// reproboard's V8 heap probe, preloaded into a Node.js target with
// NODE_OPTIONS=--require=<this file> (see harness/meter/v8heap.go). On
// SIGUSR2 it forces a full collection and writes "<seq> <heapUsed>" to
// $REPROBOARD_V8HEAP_DIR/<pid>.heap, so the meter reads the live heap after
// GC without the program's cooperation. It changes nothing else.
'use strict';
(() => {
  const dir = process.env.REPROBOARD_V8HEAP_DIR;
  if (!dir) return;
  const fs = require('fs');
  const path = require('path');
  require('v8').setFlagsFromString('--expose-gc');
  const gc = require('vm').runInNewContext('gc');
  const file = path.join(dir, process.pid + '.heap');
  let seq = 0;
  process.on('SIGUSR2', () => {
    gc();
    seq++;
    fs.writeFileSync(file + '.tmp', seq + ' ' + process.memoryUsage().heapUsed + '\n');
    fs.renameSync(file + '.tmp', file);
  });
})();
