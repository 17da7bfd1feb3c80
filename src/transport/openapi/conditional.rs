//! Conditional admin requests in the document: the `ETag` every admin answer carries and the
//! `If-Match` every admin write accepts (with its 412), added to the admin paths once they are
//! built, so that no admin operation can be described without them.

use utoipa::PartialSchema;
use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{Header, Paths, Ref, RefOr, Required};

/// Adds `ETag` to the success answers of every `/admin/...` operation, and `If-Match` with its
/// 400 and 412 answers to every one that writes.
pub(super) fn describe(paths: &mut Paths) {
    for (path, item) in paths.paths.iter_mut() {
        if !path.starts_with("/admin/") {
            continue;
        }
        // The preview is a POST that writes nothing and takes no condition. (The impact
        // preview writes nothing either, but takes `If-Match`: the revision it is meant for.)
        let post_writes = path != "/admin/preview";
        for (operation, writes) in [
            (&mut item.get, false),
            (&mut item.post, post_writes),
            (&mut item.put, true),
            (&mut item.patch, true),
            (&mut item.delete, true),
        ] {
            if let Some(operation) = operation {
                conditional(operation, writes);
            }
        }
    }
}

fn conditional(operation: &mut Operation, writes: bool) {
    let responses = &mut operation.responses.responses;
    for (status, response) in responses.iter_mut() {
        if let RefOr::T(response) = response
            && status.starts_with('2')
        {
            response
                .headers
                .insert("ETag".to_owned(), RefOr::T(etag_header()));
        }
    }
    if !writes {
        return;
    }
    for (status, name) in [("400", "Malformed"), ("412", "PreconditionFailed")] {
        responses
            .entry(status.to_owned())
            .or_insert_with(|| Ref::from_response_name(name).into());
    }
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(RefOr::T(if_match_parameter()));
}

fn etag_header() -> Header {
    utoipa::openapi::HeaderBuilder::new()
        .schema(Some(String::schema()))
        .description(Some(
            "The catalog revision the answer reflects (a write: the one it produced), as an \
             entity tag: `\"r42\"`. Send it back in `If-Match`.",
        ))
        .build()
}

fn if_match_parameter() -> Parameter {
    ParameterBuilder::new()
        .name("If-Match")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .schema(Some(String::schema()))
        .description(Some(
            "Apply the write only if the catalog is still at this revision (`\"r42\"`, a list \
             of such tags, or `*`); otherwise 412 and nothing changes. Without it, the write \
             applies to the current revision.",
        ))
        .build()
}
