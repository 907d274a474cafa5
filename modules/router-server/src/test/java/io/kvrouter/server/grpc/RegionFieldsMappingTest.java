package io.kvrouter.server.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;
import org.junit.jupiter.api.Test;

/** The region fields of the Router answers, as the edge maps them. */
class RegionFieldsMappingTest {
  private static final SelectionResult PICK = new SelectionResult(new Rank("w1", 0), "http://w1:8000", "us", 2, 32,
      1.5, new RankLoad(3, 1, 512, 32), 7, "kv");

  @Test
  void aSelectionNamesItsWorkersRegionAndTheRouterEndpointOnlyWhenGiven() {
    Selection regional = ProtoMapping.toProto(PICK);
    assertThat(regional.getRegion()).isEqualTo("us");
    assertThat(regional.getWorker().getRegion()).isEqualTo("us");
    assertThat(regional.getRouterEndpoint()).isEmpty();
    assertThat(ProtoMapping.toProto(PICK, "10.0.0.9:50051").getRouterEndpoint()).isEqualTo("10.0.0.9:50051");
  }

  @Test
  void aBookingCarriesTheBookedWorkersRegionForItsBookingRef() throws Exception {
    Booking booking = ProtoMapping.toProto(new BookingAnswer(PICK, "r1", 42, false, 0, 1000, 5), "10.0.0.9:50051");
    assertThat(booking.getRegion()).isEqualTo("us");
    assertThat(booking.getSelection().getRouterEndpoint()).isEqualTo("10.0.0.9:50051");
    // field numbers are the contract: region 7 on Booking, 9 and 10 on Selection, 4 on BookingRef
    assertThat(Booking.getDescriptor().findFieldByName("region").getNumber()).isEqualTo(7);
    assertThat(Selection.getDescriptor().findFieldByName("region").getNumber()).isEqualTo(9);
    assertThat(Selection.getDescriptor().findFieldByName("router_endpoint").getNumber()).isEqualTo(10);
    assertThat(io.kvrouter.api.v1.BookingRef.getDescriptor().findFieldByName("region").getNumber()).isEqualTo(4);
    assertThat(io.kvrouter.api.v1.ModelState.getDescriptor().findFieldByName("pools").getNumber()).isEqualTo(18);
  }
}
