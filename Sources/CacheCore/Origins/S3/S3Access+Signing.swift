import NIOHTTP1

extension S3Access {
    /// `request`'s headers signed with the mount's keys for its region; `payloadHash` is the
    /// hex SHA-256 of the body (of nothing for a GET or HEAD). Throws when no keys were found.
    func signedHeaders(_ request: S3Request,
                       payloadHash: String = SignatureV4.emptyPayloadHash) throws(OriginFailure) -> HTTPHeaders {
        let keys: AWSCredentials
        switch credentials {
        case .success(let loaded): keys = loaded
        case .failure(let reason): throw .failed("no S3 credentials: \(reason)")
        }
        var headers = HTTPHeaders()
        for header in request.signedHeaders(SignatureV4(credentials: keys, region: region), payloadHash: payloadHash) {
            headers.add(name: header.name, value: header.value)
        }
        return headers
    }

    /// What a 403 adds to its log line: the key and region the request was signed with.
    var checkCredentialsHint: String {
        // Without keys the hint says so by an empty key id.
        let keyID = (try? credentials.get().accessKeyID) ?? ""
        return "check credentials (access key \(keyID), region \(region))"
    }
}
