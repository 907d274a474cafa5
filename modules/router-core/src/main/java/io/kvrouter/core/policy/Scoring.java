package io.kvrouter.core.policy;

/**
 * What a scorer reads of the request and the model beside the candidates: the request's prompt and the policy's
 * parameters, with the request's overrides already applied.
 *
 * @param requestBlocks blocks the request occupies, ceil(isl / block size)
 * @param overlapCreditDecay how fast the device credit falls with a rank's prefill backlog above the least-loaded
 *     candidate's (0: off)
 * @param decodeActiveRequestWeight blocks of cost per active request on the rank (0: off)
 * @param sharedCacheMultiplier credit per shared-cache block beyond the rank's device prefix (0: off)
 * @param loadBoundFactor a rank whose in-flight requests would exceed this factor times the candidates' mean gets no
 *     cache credit (0: off)
 * @param prefillBacklogWeight how much a rank's queued prefill tokens count against the request's own (1: as much)
 */
public record Scoring(int islTokens, int blockSize, int requestBlocks, double overlapCredit, double prefillLoadScale,
    double hostCacheHitWeight, double diskCacheHitWeight, double overlapCreditDecay,
    double decodeActiveRequestWeight, double sharedCacheMultiplier, double loadBoundFactor,
    double prefillBacklogWeight) {}
