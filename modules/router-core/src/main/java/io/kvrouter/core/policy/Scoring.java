package io.kvrouter.core.policy;

/**
 * What a scorer reads of the request and the model beside the candidates: the request's prompt and the policy's
 * parameters, with the request's overrides already applied.
 *
 * @param requestBlocks blocks the request occupies, ceil(isl / block size)
 */
public record Scoring(int islTokens, int blockSize, int requestBlocks, double overlapCredit, double prefillLoadScale,
    double hostCacheHitWeight, double diskCacheHitWeight) {}
