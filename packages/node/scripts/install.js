'use strict';
// npm install (where npm runs install scripts; npm 11 asks for them to be
// approved): builds oxidis-server ahead of the first startServer(), which
// would otherwise build it then. $OXIDIS_SERVER_BIN set: nothing to build.

const fs = require('node:fs');
const { buildBinary, inRepository } = require('..');

const env = process.env.OXIDIS_SERVER_BIN;
try {
  if (env) {
    fs.accessSync(env, fs.constants.X_OK);
  } else if (inRepository()) {
    buildBinary();
  }
} catch (e) {
  console.error(`oxidis: ${e.message}`);
  process.exit(1);
}
