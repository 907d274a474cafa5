package io.kvrouter.epp;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.stub.StreamObserver;

/** {@code envoy.service.ext_proc.v3.ExternalProcessor}: one {@link PickerStream} per Process call (per request). */
final class ExternalProcessorService implements ExternalProcessorGrpc.AsyncService {
  private final EppContext ctx;

  ExternalProcessorService(EppContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public StreamObserver<ProcessingRequest> process(StreamObserver<ProcessingResponse> responses) {
    return new PickerStream(ctx, responses);
  }
}
