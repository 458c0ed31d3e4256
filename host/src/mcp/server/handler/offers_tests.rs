use super::*;

fn keys(n: usize) -> Vec<(String, usize)> {
    (0..n).map(|i| (format!("k{i:03}"), i)).collect()
}

#[test]
fn lists_page_by_an_opaque_cursor() {
    let (first, next) = page(keys(5), None, 2).unwrap();
    assert_eq!(first, [0, 1]);
    let cursor = next.expect("more");
    let request = PaginatedRequestParams::default().with_cursor(Some(cursor));
    let (second, next) = page(keys(5), Some(&request), 2).unwrap();
    assert_eq!(second, [2, 3]);
    let request = PaginatedRequestParams::default().with_cursor(next);
    let (last, next) = page(keys(5), Some(&request), 2).unwrap();
    assert_eq!((last, next), (vec![4], None));
    // A full last page has no cursor after it.
    assert_eq!(page(keys(2), None, 2).unwrap().1, None);
    let bad = PaginatedRequestParams::default().with_cursor(Some("%%%".into()));
    let err = page(keys(5), Some(&bad), 2).unwrap_err();
    assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
}

#[test]
fn an_unknown_uri_is_invalid_params_with_the_uri() {
    let err = mcp_error(OfferError::UnknownResource {
        uri: "demo://nope".into(),
    });
    assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert_eq!(err.data, Some(json!({"uri": "demo://nope"})));
    let err = mcp_error(OfferError::MissingArgument {
        prompt: "p".into(),
        argument: "a".into(),
    });
    assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    let err = mcp_error(OfferError::Failed("boom".into()));
    assert_eq!(err.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
}
