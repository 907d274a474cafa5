package io.kvrouter.engines.discovery;

import io.kvrouter.engines.config.EngineSpec;

/** An engine as one source of one node gives it: the spec, and where it came from ({@code file:PATH}, ...). */
public record SourcedSpec(EngineSpec spec, String origin) {}
