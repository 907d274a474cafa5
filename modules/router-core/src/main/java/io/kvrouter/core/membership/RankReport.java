package io.kvrouter.core.membership;

/** One rank's engine-reported load in a Workers.ReportLoad call. */
public record RankReport(int dpRank, long decodeBlocks, long prefillTokens, int waitingRequests) {}
