package io.kvrouter.core.load;

/** Engine-reported load of one rank (Workers.ReportLoad); also the worker's heartbeat. */
public record ReportedLoad(long decodeBlocks, long prefillTokens, int waitingRequests, long reportedAtMillis) {}
