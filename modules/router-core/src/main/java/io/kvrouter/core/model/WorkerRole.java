package io.kvrouter.core.model;

public enum WorkerRole {
  AGGREGATED,
  PREFILL,
  DECODE
}
