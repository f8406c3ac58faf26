//! A list page as an HTTP body: its length known up front
//! (`Content-Length`), its bytes handed to the connection a piece at a
//! time (`PageJson`), so a page of every row never sits whole in memory,
//! once built and once more in the connection's write buffer.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use bytes::Bytes;
use openprogram_actors::registry::PageJson;

/// About what the connection writes to its socket at once.
const PIECE: usize = 64 << 10;

pub struct PageBody(pub PageJson);

impl MessageBody for PageBody {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Sized(self.0.len() as u64)
    }

    fn poll_next(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Poll::Ready(
            self.get_mut()
                .0
                .next_piece(PIECE)
                .map(|b| Ok(Bytes::from(b))),
        )
    }
}
