package io.kvrouter.engines.connector;

/**
 * Where a rank's stream stood: the last engine sequence number applied, the digest of that batch's payload (to tell
 * the same engine from a restarted one that reached the same number) and the next router event id. Published with
 * the connector's status, so the node that takes the connector over after a crash continues from it: it replays from
 * {@code lastSeq}, checks the digest, and gives the replayed batches the same event ids as before (the index ignores
 * the ones it already applied).
 */
public record RankCheckpoint(int rank, long lastSeq, long lastDigest, long nextEventId) {}
