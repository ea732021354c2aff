"""The kit core: scenario files and their schema, the rule catalogue, the contract
registry, the adapter protocol, the runner and its verdicts. The core never imports a
contract room; it reaches rooms through ``registry`` by module name only.
"""
