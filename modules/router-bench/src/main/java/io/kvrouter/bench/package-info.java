/** Benchmarks and load drivers of kvrouter; see the module README for commands and results. */
package io.kvrouter.bench;
