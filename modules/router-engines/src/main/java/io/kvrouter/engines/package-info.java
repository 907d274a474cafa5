/**
 * Real engines feed the router: vLLM and SGLang KV events over ZMQ, load and capacity from their Prometheus metrics,
 * engines from a file or from Kubernetes, one connector per engine and region (see the module's README).
 */
package io.kvrouter.engines;
