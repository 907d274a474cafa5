package io.kvrouter.engines.connector;

import io.kvrouter.engines.events.TranslationCounters;

/**
 * One rank's KV event stream as its connector sees it.
 *
 * @param connected the SUB socket is connected to the engine's publisher (ZMQ's monitor)
 * @param lastSeq the last engine sequence number applied, -1 before the first
 * @param gaps sequence gaps seen on the live stream
 * @param replays replay requests answered
 * @param replayFailures replays that got no answer in time from any of their attempts (or no replay endpoint
 *     configured)
 * @param replayRetries replay requests nothing answered in time that were asked again
 * @param caughtUpBatches batches the live stream missed that an idle rank's catch-up replay applied
 * @param clears times the connector cleared the rank: a gap the replay did not cover, an engine restart, an
 *     attach that could not continue from a checkpoint
 * @param duplicates batches dropped as already applied (the live copy of a replayed batch)
 * @param malformed messages or payloads that were not an engine batch (wrong frames, not msgpack, wrong types)
 * @param batches batches applied
 * @param lagMillis engine publish → index of the last batch applied (from the batch's {@code ts}), -1 if unknown
 * @param heldBlocks blocks the rank holds as far as the connector knows
 * @param attachedFromSeq the first engine sequence number the connector's replay from the start found (0: the
 *     engine's whole history; above 0: batches before it were no longer held), -1 if it did not replay from the start
 */
public record RankStatus(int rank, boolean connected, long lastSeq, long gaps, long replays, long replayFailures,
    long replayRetries, long caughtUpBatches, long clears, long duplicates, long malformed, long batches, long events,
    long lagMillis, long maxLagMillis, long publishErrors, int heldBlocks, TranslationCounters translation,
    RankCheckpoint checkpoint, long attachedFromSeq) {}
